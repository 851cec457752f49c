/* SPDX-License-Identifier: GPL-2.0-only OR Apache-2.0 */
/* The process-tracking event ABI shared by the BPF program (process.bpf.c)
 * and user space (bpf/loader.cpp, tracking/). Plain C, fixed-size
 * fields only, so both compilers lay the records out identically.
 *
 * Rules for changing it:
 * - Message types and loss causes are pinned numbers: never renumber or
 *   reuse one, only append.
 * - Any change of a record's layout bumps ALLOX_PROCESS_ABI. User space
 *   refuses records of another ABI (a decode error, never a crash).
 * - Every record starts with struct allox_event_header; `size` is the size
 *   of the whole record. */
#ifndef ALLOX_BPF_PROCESS_H
#define ALLOX_BPF_PROCESS_H

#ifdef __bpf__
/* The BPF side gets the kernel's types from vmlinux.h. */
#else
#include <linux/types.h>
#endif

#define ALLOX_PROCESS_ABI 2

#define ALLOX_COMM_LEN 16
#define ALLOX_FILENAME_LEN 256

/* Record types (pinned). */
enum allox_event_type {
  ALLOX_EVENT_FORK = 1,
  ALLOX_EVENT_EXEC = 2,
  ALLOX_EVENT_EXIT = 3,
  /* A process of a tracked run changed a file (write provenance). */
  ALLOX_EVENT_WRITE = 4,
  /* A process of a tracked run changed a name: unlink, rename, link, or
   * a change by path (truncate, chmod...). Named by its directory and the
   * path as the process gave it, since the kernel has not looked it up
   * yet when the system call starts. */
  ALLOX_EVENT_WRITE_PATH = 5,
};

/* What a write record says the process did to the inode (pinned). One
 * record per (process, inode, op) and write generation. */
enum allox_write_op {
  /* Opened for writing, or wrote through a descriptor (write, pwrite,
   * writev, fallocate, copy_file_range...). */
  ALLOX_WRITE_DATA = 1,
  /* The open created the file. */
  ALLOX_WRITE_CREATE = 2,
  /* Truncated: open(O_TRUNC), ftruncate, truncate. */
  ALLOX_WRITE_TRUNCATE = 3,
  /* Reserved (a shared writable mapping is opened for writing first). */
  ALLOX_WRITE_MMAP = 4,
  /* The inode's name was removed (unlink; the inode is the removed one). */
  ALLOX_WRITE_UNLINK = 5,
  ALLOX_WRITE_RMDIR = 6,
  ALLOX_WRITE_MKDIR = 7,
  /* Moved to another name (the inode that moved). */
  ALLOX_WRITE_RENAME = 8,
  /* A rename's target name (which a rename replaces if it exists). */
  ALLOX_WRITE_REPLACE = 9,
  /* A new name for an existing file (link; the new name). */
  ALLOX_WRITE_LINK = 10,
  ALLOX_WRITE_SYMLINK = 11,
  /* chmod, chown, utimes (a size change is ALLOX_WRITE_TRUNCATE). */
  ALLOX_WRITE_SETATTR = 12,
  ALLOX_WRITE_MKNOD = 13,
  ALLOX_WRITE_OPS = 14,
};

/* Header flags. */
enum allox_event_flag {
  /* The process is the run's root: the first one seen in a tracked cgroup
   * without a tracked parent (by fork into the group, or by exec of a task
   * moved into it). */
  ALLOX_FLAG_ROOT = 1u << 0,
  /* exec: the filename filled the buffer and may be cut short. */
  ALLOX_FLAG_FILENAME_TRUNCATED = 1u << 1,
};

/* Why an event was not delivered; the index into the `loss_counts`
 * array (pinned). */
enum allox_loss_cause {
  /* The ring buffer had no room for a record of that type. */
  ALLOX_LOSS_RINGBUF_FORK = 0,
  ALLOX_LOSS_RINGBUF_EXEC = 1,
  ALLOX_LOSS_RINGBUF_EXIT = 2,
  /* The `tasks` map was full: a new process of a run could not be
   * recorded, so its own events (and its descendants') are lost. */
  ALLOX_LOSS_TASKS_FULL = 3,
  /* A tracked process's run has no counters any more (untracked while it
   * still had processes). */
  ALLOX_LOSS_NO_RUN = 4,
  /* The ring buffer had no room for a write record. Never fails the run:
   * the run's writes_lost grows and its changes read `unattributed:
   * "loss"`. */
  ALLOX_LOSS_RINGBUF_WRITE = 5,
  ALLOX_LOSS_CAUSES = 6,
};

/* A process identity that survives pid reuse: the thread-group id and
 * the group leader's start time (CLOCK_BOOTTIME ns, task->start_boottime,
 * which exec by a non-leader thread carries over). With the boot id, user
 * space makes it a string id. */
struct allox_identity {
  __u64 start_ns;
  __u32 tgid;
  __u32 reserved;
};

struct allox_event_header {
  __u16 abi;   /* ALLOX_PROCESS_ABI */
  __u16 type;  /* enum allox_event_type */
  __u32 size;  /* of the whole record, header included */
  __u64 cookie; /* the run */
  __u64 seq;   /* per run, from 1; a gap is an event lost in the kernel */
  __u64 time_ns; /* CLOCK_BOOTTIME */
  __u32 flags; /* enum allox_event_flag */
  __u32 cpu;
  struct allox_identity process; /* the process the record is about */
};

/* A new process (not a thread) of a tracked run. process.tgid is the
 * child's pid. */
struct allox_fork_event {
  struct allox_event_header hdr;
  struct allox_identity parent;
  __u32 parent_tid; /* the thread that forked */
  __u32 reserved;
  char comm[ALLOX_COMM_LEN];
};

/* A successful exec. When a non-leader thread execs, the kernel gives it
 * the thread-group id and the leader's start time: same identity, and
 * former_tid names the thread. */
struct allox_exec_event {
  struct allox_event_header hdr;
  __u32 former_tid;
  __u32 reserved;
  char comm[ALLOX_COMM_LEN];
  char filename[ALLOX_FILENAME_LEN];
};

/* The whole process exited (its last thread). */
struct allox_exit_event {
  struct allox_event_header hdr;
  __u32 tid;       /* the last thread */
  __u32 exit_code; /* raw task->exit_code: status << 8 | signal */
  char comm[ALLOX_COMM_LEN];
};

/* A change to a file on Btrfs by a process of a tracked run. The header's
 * seq is the run's write sequence (from 1; a gap is a lost write record),
 * apart from the process events' one. The file is named by inode, never
 * by path: a path walk on the write path would cost more than the write. */
struct allox_write_event {
  struct allox_event_header hdr;
  __u64 subvol; /* the Btrfs subvolume (tree) id */
  __u64 ino;
  __u32 op;  /* enum allox_write_op */
  __u32 tid; /* the thread that did it */
};

#define ALLOX_WRITE_NAME_LEN 256

/* Path flags. */
enum allox_write_path_flag {
  /* The path filled the buffer and may be cut short. */
  ALLOX_WRITE_PATH_TRUNCATED = 1u << 0,
  /* The path is absolute: dir names the process's root directory. */
  ALLOX_WRITE_PATH_ABSOLUTE = 1u << 1,
};

/* A successful change by name. The path is relative to the directory
 * (subvol, dir_ino): the process's working directory, the directory
 * descriptor it passed, or (absolute) its root. subvol is 0 when that
 * directory is not on Btrfs (a sandbox's root). */
struct allox_write_path_event {
  struct allox_event_header hdr;
  __u64 subvol;
  __u64 dir_ino;
  __u32 op;    /* enum allox_write_op */
  __u32 tid;
  __u32 flags; /* enum allox_write_path_flag */
  __u32 reserved;
  char path[ALLOX_WRITE_NAME_LEN];
};

/* `tasks` map value: the run a process belongs to. */
struct allox_task {
  __u64 cookie;
  __u64 start_ns;
};

/* `runs` map value: one run's counters, created by user space when it
 * tracks the run. Updated atomically from every CPU. */
struct allox_run {
  __u64 next_seq; /* sequences handed out, delivered or not */
  __u64 produced; /* records submitted to the ring buffer */
  __u64 lost;     /* records that could not be delivered */
  __u32 root_tgid; /* 0 until the root is claimed */
  __u32 reserved;
  __u64 write_seq;   /* write records handed out, delivered or not */
  __u64 writes_lost; /* write records that could not be delivered */
};

/* `write_seen` map key: a write record already sent in the current write
 * generation is not sent again. */
struct allox_write_key {
  __u64 start_ns;
  __u64 subvol;
  __u64 ino;
  __u32 tgid;
  __u32 op;
};

#define ALLOX_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#ifdef __cplusplus
#undef ALLOX_STATIC_ASSERT
#define ALLOX_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#endif

ALLOX_STATIC_ASSERT(sizeof(struct allox_identity) == 16, "identity layout");
ALLOX_STATIC_ASSERT(sizeof(struct allox_event_header) == 56, "header layout");
ALLOX_STATIC_ASSERT(sizeof(struct allox_fork_event) == 96, "fork layout");
ALLOX_STATIC_ASSERT(sizeof(struct allox_exec_event) == 336, "exec layout");
ALLOX_STATIC_ASSERT(sizeof(struct allox_exit_event) == 80, "exit layout");
ALLOX_STATIC_ASSERT(sizeof(struct allox_task) == 16, "task layout");
ALLOX_STATIC_ASSERT(sizeof(struct allox_write_event) == 80, "write layout");
ALLOX_STATIC_ASSERT(sizeof(struct allox_write_path_event) == 344,
                    "write path layout");
ALLOX_STATIC_ASSERT(sizeof(struct allox_run) == 48, "run layout");
ALLOX_STATIC_ASSERT(sizeof(struct allox_write_key) == 32, "write key layout");

#endif /* ALLOX_BPF_PROCESS_H */
