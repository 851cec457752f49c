// SPDX-License-Identifier: GPL-2.0-only OR Apache-2.0
/* The connect guard: cgroup connect4/connect6 programs on the sessions'
 * cgroup subtree that refuse (EPERM) connections from sandboxed processes
 * to the daemon's own listen addresses and to a deny list.
 *
 * The kernel runs them for every connect(2) (and UDP sendmsg with an
 * implicit connect of a connected socket) of a task in the subtree, before
 * any packet leaves, in every network namespace the task may enter. Only
 * the destination is looked at: one hash lookup for the address and port,
 * one for the address with port 0 (every port). */
#include "vmlinux.h"

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "connect_guard.h"

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, ALLOX_GUARD_MAX_RULES);
  __type(key, struct allox_guard_key);
  __type(value, __u8);
} refused SEC(".maps");

/* Attempts refused, for the daemon's metrics. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} refusals SEC(".maps");

static __always_inline int verdict(struct allox_guard_key *k) {
  int hit = bpf_map_lookup_elem(&refused, k) != 0;
  if (!hit) {
    k->port = 0;
    hit = bpf_map_lookup_elem(&refused, k) != 0;
  }
  if (!hit)
    return 1;
  __u32 zero = 0;
  __u64 *n = bpf_map_lookup_elem(&refusals, &zero);
  if (n)
    *n += 1;
  return 0;
}

/* Loopback and "this host" as one key each: a daemon on 127.0.0.1 or on
 * a wildcard is reached through any 127/8 address and through 0.0.0.0. */
static __always_inline void set_v4(struct allox_guard_key *k, __u32 ip) {
  __u32 host = bpf_ntohl(ip);
  if ((host >> 24) == 127 || host == 0)
    ip = bpf_htonl(0x7f000001);
  k->family = 4;
  __builtin_memcpy(k->addr, &ip, 4);
}

SEC("cgroup/connect4")
int guard_connect4(struct bpf_sock_addr *ctx) {
  struct allox_guard_key k = {};
  set_v4(&k, ctx->user_ip4);
  k.port = bpf_ntohs((__u16)ctx->user_port);
  return verdict(&k);
}

SEC("cgroup/connect6")
int guard_connect6(struct bpf_sock_addr *ctx) {
  struct allox_guard_key k = {};
  __u32 a0 = ctx->user_ip6[0], a1 = ctx->user_ip6[1];
  __u32 a2 = ctx->user_ip6[2], a3 = ctx->user_ip6[3];
  k.port = bpf_ntohs((__u16)ctx->user_port);
  if (a0 == 0 && a1 == 0 && a2 == bpf_htonl(0xffff)) {
    /* ::ffff:a.b.c.d reaches the IPv4 address on a dual-stack socket. */
    set_v4(&k, a3);
    return verdict(&k);
  }
  if (a0 == 0 && a1 == 0 && a2 == 0 && (a3 == 0 || a3 == bpf_htonl(1)))
    a3 = bpf_htonl(1); /* :: is this host, as ::1 */
  k.family = 6;
  __builtin_memcpy(k.addr, &a0, 4);
  __builtin_memcpy(k.addr + 4, &a1, 4);
  __builtin_memcpy(k.addr + 8, &a2, 4);
  __builtin_memcpy(k.addr + 12, &a3, 4);
  return verdict(&k);
}
