/* SPDX-License-Identifier: GPL-2.0-only OR Apache-2.0 */
/* The connect guard's map key, shared by connect_guard.bpf.c and user
 * space (bpf/connect_guard.cpp). Plain C, fixed-size fields. */
#ifndef ALLOX_BPF_CONNECT_GUARD_H
#define ALLOX_BPF_CONNECT_GUARD_H

#ifdef __bpf__
/* The BPF side gets the kernel's types from vmlinux.h. */
#else
#include <linux/types.h>
#endif

/* Refused destinations at the same time (the daemon's addresses, one per
 * local address when it listens on a wildcard, plus the deny list). */
#define ALLOX_GUARD_MAX_RULES 1024

/* A refused destination. IPv4 in the first four bytes of addr; both in
 * network byte order. Loopback is normalised before the lookup: every
 * 127.0.0.0/8 and 0.0.0.0 destination is looked up as 127.0.0.1, :: as
 * ::1, and ::ffff:a.b.c.d as the IPv4 address. port 0 in a rule refuses
 * every port of the address. */
struct allox_guard_key {
  __u8 family; /* 4 or 6 */
  __u8 pad;
  __u16 port; /* host byte order */
  __u8 addr[16];
};

#endif
