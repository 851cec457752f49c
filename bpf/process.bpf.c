// SPDX-License-Identifier: GPL-2.0-only OR Apache-2.0
/* Process tracking, kernel side: fork, exec and exit of the processes of
 * tracked runs, attributed in the kernel and sent to user space through
 * one ring buffer (the record layouts are in process.h).
 *
 * Attribution. User space seeds `tracked_cgroups` (cgroup id -> run
 * cookie) and `runs` (cookie -> counters) before the run's first process
 * exists. A process belongs to a run when
 *   - its parent process belongs to it (the child inherits), or
 *   - it is the first process seen inside one of the run's cgroups
 *     without a tracked parent: the run's root (claimed once, atomically).
 * Everything else costs one hash lookup and emits nothing. Threads never
 * make processes: `tasks` is keyed by thread-group id, so a non-leader
 * thread that execs keeps its process (the kernel hands it the group id
 * and the leader's start time).
 *
 * The programs are BTF tracepoints (tp_btf): their arguments are typed by
 * the kernel's own BTF, and every field is read with CO-RE relocations,
 * so no tracepoint layout is declared here. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "process.h"

/* tp_btf programs and bpf_probe_read_kernel_str need a GPL-compatible
 * licence. */
char LICENSE[] SEC("license") = "GPL";

/* -- settings, fixed by the loader before load (.rodata) -------------- */

/* The ABI this object was built with; the loader compares it with its own
 * before loading. */
const volatile __u32 object_abi = ALLOX_PROCESS_ABI;
/* The kernel passes sched_process_exit a `group_dead` argument (6.16+).
 * Without it the program reads signal->live instead. The loader sets this
 * from the kernel's BTF; the verifier then drops the branch not taken, so
 * the argument is never read on kernels that lack it. */
const volatile bool exit_has_group_dead = false;
/* bpf_printk on every loss (read with `bpftool prog tracelog`). */
const volatile bool debug = false;
/* 0: wake the reader the way the kernel does by default (as soon as it has
 * caught up). Otherwise wake it only once this many bytes wait in the
 * ring; the reader then finds the rest at its next poll timeout. A wakeup
 * is an irq_work, which in a VM costs more than the rest of the program. */
const volatile __u32 wakeup_bytes = 0;
/* While the reader gathers a batch (reader_batching below), it is woken
 * only once this many bytes wait: a quarter of the ring. */
const volatile __u32 batch_wakeup_bytes = 0;

/* -- shared with the reader (.bss, mapped into user space) ------------ */

/* The write generation: user space bumps it when a session seals its
 * write set (a checkpoint), so that a (process, inode, op) already sent
 * is sent again for the next interval. In .data, not .bss: it starts at
 * 1, so that no zeroed map value matches it. */
__u64 write_generation = 1;

/* Non-zero while the reader sleeps until its batch is due, the records so
 * far left unread in the ring. The kernel's own rule (wake a reader that
 * has caught up) would then wake it for nothing, or, once it catches up
 * again, for every record; instead it is woken when the ring fills past
 * batch_wakeup_bytes, and otherwise wakes when the batch is due. */
__u32 reader_batching = 0;

/* Records not delivered, by enum allox_loss_cause. In .bss rather than a
 * per-CPU map: the reader reads them with every batch, and a load from
 * the mapping costs no system call, while a loss (the only writer) is
 * rare enough for a shared atomic counter. */
__u64 loss_counts[ALLOX_LOSS_CAUSES] = {};

/* -- maps ------------------------------------------------------------- */

/* cgroup id -> run cookie. Sized by the loader. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u64);
  __type(value, __u64);
} tracked_cgroups SEC(".maps");

/* run cookie -> the run's counters and root. Sized by the loader. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u64);
  __type(value, struct allox_run);
} runs SEC(".maps");

/* tgid -> the run a live process belongs to. Sized by the loader. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, __u32);
  __type(value, struct allox_task);
} tasks SEC(".maps");

/* (process, inode, op) -> the write generation it was last sent in.
 * LRU: an evicted entry only means one more record. Sized by the loader. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, struct allox_write_key);
  __type(value, __u64);
} write_seen SEC(".maps");

/* tid -> a system call of a tracked process in flight that may change a
 * file: what its exit records if it succeeds. LRU: the entry of a thread
 * killed inside the call is pushed out by later ones. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, struct allox_write_path_event);
} write_pending SEC(".maps");

/* The records. Its size is set by the loader. */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* -- helpers ---------------------------------------------------------- */

/* Counts a record that will never reach user space, globally by cause
 * and, when the run is known, in the run's counters. */
static __always_inline void count_loss(__u32 cause, struct allox_run *run)
{
  if (cause < ALLOX_LOSS_CAUSES)
    __sync_fetch_and_add(&loss_counts[cause], 1);
  if (run)
    __sync_fetch_and_add(&run->lost, 1);
  if (debug)
    bpf_printk("allox: event lost, cause %u", cause);
}

/* The start time that names a process: its group leader's, which an exec
 * by another thread keeps. */
static __always_inline __u64 process_start(struct task_struct *task)
{
  return BPF_CORE_READ(task, group_leader, start_boottime);
}

/* The id of the task's cgroup v2 group (its kernfs node id, the inode
 * number user space sees on cgroupfs). */
static __always_inline __u64 task_cgroup(struct task_struct *task)
{
  return BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
}

/* Claims the run's root for `tgid` if no process holds it yet. */
static __always_inline bool claim_root(struct allox_run *run, __u32 tgid)
{
  return __sync_val_compare_and_swap(&run->root_tgid, 0, tgid) == 0;
}

/* Records a process of a run in `tasks`; a full map is a loss. */
static __always_inline bool remember(__u32 tgid, __u64 cookie, __u64 start,
                                     struct allox_run *run)
{
  struct allox_task t = {.cookie = cookie, .start_ns = start};

  if (bpf_map_update_elem(&tasks, &tgid, &t, BPF_ANY) == 0)
    return true;
  count_loss(ALLOX_LOSS_TASKS_FULL, run);
  return false;
}

static __always_inline void fill_header(struct allox_event_header *h,
                                        __u16 type, __u32 size, __u64 cookie,
                                        __u64 seq, __u32 flags, __u64 start,
                                        __u32 tgid)
{
  h->abi = ALLOX_PROCESS_ABI;
  h->type = type;
  h->size = size;
  h->cookie = cookie;
  h->seq = seq;
  h->time_ns = bpf_ktime_get_boot_ns();
  h->flags = flags;
  h->cpu = bpf_get_smp_processor_id();
  h->process.start_ns = start;
  h->process.tgid = tgid;
  h->process.reserved = 0;
}

/* Flags for bpf_ringbuf_submit: the wakeup_bytes setting, or the reader's
 * batching. */
static __always_inline __u64 submit_flags(void)
{
  __u32 threshold = wakeup_bytes;

  if (!threshold) {
    if (!*(volatile __u32 *)&reader_batching)
      return 0;
    threshold = batch_wakeup_bytes;
  }
  return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= threshold
             ? BPF_RB_FORCE_WAKEUP
             : BPF_RB_NO_WAKEUP;
}

/* The run of a tracked process: NULL (a loss) when user space dropped the
 * run's counters while the process lived. */
static __always_inline struct allox_run *run_of(__u64 cookie)
{
  struct allox_run *run = bpf_map_lookup_elem(&runs, &cookie);

  if (!run)
    count_loss(ALLOX_LOSS_NO_RUN, NULL);
  return run;
}

/* -- programs --------------------------------------------------------- */

/* A new task. Runs in the parent after the child is fully set up, so the
 * child's cgroup is final (clone3 CLONE_INTO_CGROUP included). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
  __u32 tgid = BPF_CORE_READ(child, tgid);
  __u32 ptgid = BPF_CORE_READ(parent, tgid);
  struct allox_fork_event *e;
  struct allox_task *pt;
  struct allox_run *run;
  __u32 flags = 0;
  __u64 cookie, start, seq;

  /* A thread: its process exists already. */
  if (BPF_CORE_READ(child, pid) != tgid)
    return 0;

  pt = bpf_map_lookup_elem(&tasks, &ptgid);
  if (pt) {
    cookie = pt->cookie;
    run = run_of(cookie);
    if (!run)
      return 0;
  } else {
    /* Not a tracked parent: only the first process inside a tracked
     * cgroup counts. The child's group, not the current one: with
     * CLONE_INTO_CGROUP they differ. */
    __u64 cgroup = task_cgroup(child);
    __u64 *c = bpf_map_lookup_elem(&tracked_cgroups, &cgroup);

    if (!c)
      return 0;
    cookie = *c;
    run = run_of(cookie);
    if (!run || !claim_root(run, tgid))
      return 0;
    flags |= ALLOX_FLAG_ROOT;
  }

  start = BPF_CORE_READ(child, start_boottime);
  if (!remember(tgid, cookie, start, run))
    return 0;

  seq = __sync_fetch_and_add(&run->next_seq, 1) + 1;
  e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count_loss(ALLOX_LOSS_RINGBUF_FORK, run);
    return 0;
  }
  fill_header(&e->hdr, ALLOX_EVENT_FORK, sizeof(*e), cookie, seq, flags,
              start, tgid);
  e->parent.start_ns = process_start(parent);
  e->parent.tgid = ptgid;
  e->parent.reserved = 0;
  e->parent_tid = BPF_CORE_READ(parent, pid);
  e->reserved = 0;
  BPF_CORE_READ_STR_INTO(&e->comm, child, comm);
  __sync_fetch_and_add(&run->produced, 1);
  bpf_ringbuf_submit(e, submit_flags());
  return 0;
}

/* A successful exec, after the new image is in place (and, for a
 * non-leader thread, after the kernel made it the leader). */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *p, pid_t old_pid,
             struct linux_binprm *bprm)
{
  __u32 tgid = BPF_CORE_READ(p, tgid);
  struct allox_exec_event *e;
  struct allox_task *t;
  struct allox_run *run;
  const char *filename;
  __u32 flags = 0;
  __u64 cookie, start, seq;
  long n;

  t = bpf_map_lookup_elem(&tasks, &tgid);
  if (t) {
    cookie = t->cookie;
    start = t->start_ns;
    run = run_of(cookie);
    if (!run)
      return 0;
  } else {
    /* A task moved into a tracked cgroup (cgroup.procs) before exec can
     * be the run's root too. Here the task is the current one, so the
     * current cgroup is its own. */
    __u64 cgroup = bpf_get_current_cgroup_id();
    __u64 *c = bpf_map_lookup_elem(&tracked_cgroups, &cgroup);

    if (!c)
      return 0;
    cookie = *c;
    run = run_of(cookie);
    if (!run || !claim_root(run, tgid))
      return 0;
    flags |= ALLOX_FLAG_ROOT;
    start = process_start(p);
    if (!remember(tgid, cookie, start, run))
      return 0;
  }

  seq = __sync_fetch_and_add(&run->next_seq, 1) + 1;
  e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count_loss(ALLOX_LOSS_RINGBUF_EXEC, run);
    return 0;
  }
  e->former_tid = (__u32)old_pid;
  e->reserved = 0;
  bpf_get_current_comm(&e->comm, sizeof(e->comm));
  filename = BPF_CORE_READ(bprm, filename);
  n = bpf_probe_read_kernel_str(&e->filename, sizeof(e->filename), filename);
  if (n < 0)
    e->filename[0] = '\0';
  else if (n >= (long)sizeof(e->filename))
    flags |= ALLOX_FLAG_FILENAME_TRUNCATED;
  fill_header(&e->hdr, ALLOX_EVENT_EXEC, sizeof(*e), cookie, seq, flags,
              start, tgid);
  __sync_fetch_and_add(&run->produced, 1);
  bpf_ringbuf_submit(e, submit_flags());
  return 0;
}

/* A task exits. Only the last thread of a process ends it; that one
 * removes the process from `tasks`, which also makes the exit record
 * unique when two threads race here. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *p)
{
  __u32 tgid = BPF_CORE_READ(p, tgid);
  struct allox_exit_event *e;
  struct allox_task *t;
  struct allox_run *run;
  bool group_dead;
  __u64 cookie, start, seq;

  if (exit_has_group_dead)
    group_dead = (bool)ctx[1];
  else
    group_dead = BPF_CORE_READ(p, signal, live.counter) == 0;
  if (!group_dead)
    return 0;

  t = bpf_map_lookup_elem(&tasks, &tgid);
  if (!t)
    return 0;
  cookie = t->cookie;
  start = t->start_ns;
  if (bpf_map_delete_elem(&tasks, &tgid) != 0)
    return 0;
  run = run_of(cookie);
  if (!run)
    return 0;

  seq = __sync_fetch_and_add(&run->next_seq, 1) + 1;
  e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count_loss(ALLOX_LOSS_RINGBUF_EXIT, run);
    return 0;
  }
  fill_header(&e->hdr, ALLOX_EVENT_EXIT, sizeof(*e), cookie, seq, 0, start,
              tgid);
  e->tid = BPF_CORE_READ(p, pid);
  e->exit_code = (__u32)BPF_CORE_READ(p, exit_code);
  BPF_CORE_READ_STR_INTO(&e->comm, p, comm);
  __sync_fetch_and_add(&run->produced, 1);
  bpf_ringbuf_submit(e, submit_flags());
  return 0;
}

/* -- write provenance (the programs of its own header, which share the
 * maps and helpers above) ---------------------------------------------- */
#include "write_provenance.bpf.h"
