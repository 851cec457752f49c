/* SPDX-License-Identifier: GPL-2.0-only OR Apache-2.0 */
/* Write provenance, kernel side. Part of process.bpf.c (included once, at
 * its end): the programs share its maps, its ring buffer and its helpers,
 * and are loaded with it. The record layouts are in process.h.
 *
 * Which process of which run changed which file, from BTF tracepoints
 * alone: they need no trampoline, so they load wherever process tracking
 * does (BPF LSM and fentry programs are refused on some hosts).
 *   sys_enter        a change through a descriptor (write, pwrite, writev,
 *                    ftruncate, fallocate, fchmod...): the descriptor's
 *                    inode. A change by name (unlink, rename, link, or
 *                    truncate, chmod, utimes by path): kept per thread
 *                    until the call returns.
 *   sys_exit         an open for writing: its new descriptor's inode, and
 *                    whether it created or truncated the file. A kept
 *                    change by name that succeeded.
 *   btrfs_inode_new  a new file, directory, symlink or node.
 * The cheap tests come first: a system call that cannot change a file
 * costs a comparison, a process outside every tracked run one `tasks`
 * lookup. Only inodes on Btrfs (the workspaces) are recorded by inode. */

#define ALLOX_BTRFS_MAGIC 0x9123683E
#define ALLOX_FMODE_WRITE 0x2
#define ALLOX_FMODE_CREATED 0x100000
#define ALLOX_O_TRUNC 01000
#define ALLOX_AT_FDCWD -100
#define ALLOX_AT_REMOVEDIR 0x200
#define ALLOX_S_IFMT 0170000
#define ALLOX_S_IFDIR 0040000
#define ALLOX_S_IFREG 0100000
#define ALLOX_S_IFLNK 0120000
/* write_pending keys: a rename's second name sits beside its first. */
#define ALLOX_PENDING_SECOND 0x80000000u
/* A kept call that is an open (no op of its own). */
#define ALLOX_PENDING_OPEN 0

/* System call numbers; -1 where the architecture lacks the call. */
#if defined(__TARGET_ARCH_x86)
enum {
  NR_write = 1, NR_pwrite64 = 18, NR_writev = 20, NR_pwritev = 296,
  NR_pwritev2 = 328, NR_ftruncate = 77, NR_fallocate = 285, NR_fchmod = 91,
  NR_fchown = 93, NR_copy_file_range = 326, NR_sendfile = 40, NR_splice = 275,
  NR_open = 2, NR_creat = 85, NR_openat = 257, NR_openat2 = 437,
  NR_unlink = 87, NR_unlinkat = 263, NR_rmdir = 84, NR_rename = 82,
  NR_renameat = 264, NR_renameat2 = 316, NR_link = 86, NR_linkat = 265,
  NR_truncate = 76, NR_chmod = 90, NR_fchmodat = 268, NR_fchmodat2 = 452,
  NR_chown = 92, NR_lchown = 94, NR_fchownat = 260, NR_utimensat = 280,
  NR_utimes = 235, NR_utime = 132, NR_futimesat = 261,
};
#elif defined(__TARGET_ARCH_arm64)
enum {
  NR_write = 64, NR_pwrite64 = 68, NR_writev = 66, NR_pwritev = 70,
  NR_pwritev2 = 287, NR_ftruncate = 46, NR_fallocate = 47, NR_fchmod = 52,
  NR_fchown = 55, NR_copy_file_range = 285, NR_sendfile = 71, NR_splice = 76,
  NR_open = -1, NR_creat = -1, NR_openat = 56, NR_openat2 = 437,
  NR_unlink = -1, NR_unlinkat = 35, NR_rmdir = -1, NR_rename = -1,
  NR_renameat = 38, NR_renameat2 = 276, NR_link = -1, NR_linkat = 37,
  NR_truncate = 45, NR_chmod = -1, NR_fchmodat = 53, NR_fchmodat2 = 452,
  NR_chown = -1, NR_lchown = -1, NR_fchownat = 54, NR_utimensat = 88,
  NR_utimes = -1, NR_utime = -1, NR_futimesat = -1,
};
#endif

/* One record under construction (too large for the BPF stack). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct allox_write_path_event);
} write_scratch SEC(".maps");

/* Per thread: the file it last wrote through, in which generation. A loop
 * of writes through one descriptor then costs the descriptor's lookup and
 * this comparison, not the inode's reads and the write_seen lookup. */
struct last_write {
  __u64 file;
  __u64 generation;
};

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct last_write);
} write_last SEC(".maps");

/* The Btrfs tree (subvolume) id of an inode; 0 when it is not on Btrfs. */
static __always_inline __u64 btrfs_subvol(const struct inode *inode)
{
  struct btrfs_inode *bi;

  if (!inode || BPF_CORE_READ(inode, i_sb, s_magic) != ALLOX_BTRFS_MAGIC)
    return 0;
  bi = (void *)inode - bpf_core_field_offset(struct btrfs_inode, vfs_inode);
  return BPF_CORE_READ(bi, root, root_key.objectid);
}

/* The file behind one of the current process's descriptors. */
static __always_inline struct file *fd_file(int fd)
{
  struct task_struct *task = bpf_get_current_task_btf();
  struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
  struct file **files;
  struct file *f = NULL;

  if (fd < 0 || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds))
    return NULL;
  files = BPF_CORE_READ(fdt, fd);
  bpf_probe_read_kernel(&f, sizeof(f), &files[fd]);
  return f;
}

static __always_inline struct inode *fd_inode(int fd)
{
  struct file *f = fd_file(fd);

  return f ? BPF_CORE_READ(f, f_inode) : NULL;
}

/* The run counters of a tracked process, and its write sequence number;
 * NULL when the run has none any more. */
static __always_inline struct allox_run *write_run(struct allox_task *t,
                                                   __u64 *seq)
{
  struct allox_run *run = bpf_map_lookup_elem(&runs, &t->cookie);

  if (run)
    *seq = __sync_fetch_and_add(&run->write_seq, 1) + 1;
  return run;
}

static __always_inline void count_write_loss(struct allox_run *run)
{
  __sync_fetch_and_add(&loss_counts[ALLOX_LOSS_RINGBUF_WRITE], 1);
  __sync_fetch_and_add(&run->writes_lost, 1);
}

/* Sends one write record for the current process of the tracked task
 * `t`, unless the inode is not on Btrfs or the same (process, inode, op)
 * went out in this write generation. */
static __always_inline void record_write(struct allox_task *t, __u32 tgid,
                                         const struct inode *inode, __u32 op)
{
  struct allox_write_event *e;
  struct allox_write_key key;
  struct allox_run *run;
  __u64 gen, seq = 0, *seen;

  key.subvol = btrfs_subvol(inode);
  if (!key.subvol)
    return;
  key.start_ns = t->start_ns;
  key.ino = BPF_CORE_READ(inode, i_ino);
  key.tgid = tgid;
  key.op = op;
  gen = *(volatile __u64 *)&write_generation;
  seen = bpf_map_lookup_elem(&write_seen, &key);
  if (seen && *seen == gen)
    return;
  run = write_run(t, &seq);
  if (!run)
    return;
  e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    /* Not remembered: the next change sends it again. */
    count_write_loss(run);
    return;
  }
  bpf_map_update_elem(&write_seen, &key, &gen, BPF_ANY);
  fill_header(&e->hdr, ALLOX_EVENT_WRITE, sizeof(*e), t->cookie, seq, 0,
              t->start_ns, tgid);
  e->subvol = key.subvol;
  e->ino = key.ino;
  e->op = op;
  e->tid = (__u32)bpf_get_current_pid_tgid();
  bpf_ringbuf_submit(e, submit_flags());
}

/* A write through a descriptor: recorded unless this thread's last write
 * went through the same open file in this generation. */
static __always_inline void record_fd_write(struct allox_task *t, __u32 tgid,
                                            int fd)
{
  struct task_struct *task = bpf_get_current_task_btf();
  struct file *f = fd_file(fd);
  struct last_write *last;
  __u64 gen;

  if (!f)
    return;
  gen = *(volatile __u64 *)&write_generation;
  last = bpf_task_storage_get(&write_last, task, 0,
                              BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (last && last->file == (__u64)f && last->generation == gen)
    return;
  record_write(t, tgid, BPF_CORE_READ(f, f_inode), ALLOX_WRITE_DATA);
  if (last) {
    last->file = (__u64)f;
    last->generation = gen;
  }
}

/* Keeps a change by name until its call returns: the path as given and
 * the directory it is relative to. */
static __always_inline void keep_path(__u32 key, __u32 op, int dfd,
                                      const char *path)
{
  struct task_struct *task = bpf_get_current_task_btf();
  struct allox_write_path_event *e;
  const struct inode *dir = NULL;
  __u32 zero = 0;
  long n;

  e = bpf_map_lookup_elem(&write_scratch, &zero);
  if (!e)
    return;
  e->op = op;
  e->flags = 0;
  e->reserved = 0;
  n = bpf_probe_read_user_str(e->path, sizeof(e->path), path);
  if (n <= 0)
    return;
  if (n >= (long)sizeof(e->path))
    e->flags |= ALLOX_WRITE_PATH_TRUNCATED;
  if (e->path[0] == '/') {
    e->flags |= ALLOX_WRITE_PATH_ABSOLUTE;
    dir = BPF_CORE_READ(task, fs, root.dentry, d_inode);
  } else if (dfd == ALLOX_AT_FDCWD) {
    dir = BPF_CORE_READ(task, fs, pwd.dentry, d_inode);
  } else {
    dir = fd_inode(dfd);
  }
  e->subvol = btrfs_subvol(dir);
  e->dir_ino = dir ? BPF_CORE_READ(dir, i_ino) : 0;
  bpf_map_update_elem(&write_pending, &key, e, BPF_ANY);
}

/* Keeps an open until it returns its descriptor, with the flags it was
 * given (the kernel drops O_TRUNC from the file's own). */
static __always_inline void keep_open(__u32 key, __u32 open_flags)
{
  struct allox_write_path_event *e;
  __u32 zero = 0;

  e = bpf_map_lookup_elem(&write_scratch, &zero);
  if (!e)
    return;
  e->op = ALLOX_PENDING_OPEN;
  e->flags = open_flags;
  bpf_map_update_elem(&write_pending, &key, e, BPF_ANY);
}

/* Sends a kept change by name. */
static __always_inline void send_path(struct allox_task *t, __u32 tgid,
                                      struct allox_write_path_event *kept)
{
  struct allox_write_path_event *e;
  struct allox_run *run;
  __u64 seq = 0;

  run = write_run(t, &seq);
  if (!run)
    return;
  e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count_write_loss(run);
    return;
  }
  __builtin_memcpy(e->path, kept->path, sizeof(e->path));
  fill_header(&e->hdr, ALLOX_EVENT_WRITE_PATH, sizeof(*e), t->cookie, seq,
              0, t->start_ns, tgid);
  e->subvol = kept->subvol;
  e->dir_ino = kept->dir_ino;
  e->op = kept->op;
  e->tid = (__u32)bpf_get_current_pid_tgid();
  e->flags = kept->flags;
  e->reserved = 0;
  bpf_ringbuf_submit(e, submit_flags());
}

/* Whether sys_enter keeps the call until its exit: opens and changes by
 * name. */
static __always_inline bool keeps(long id)
{
  return id == NR_open || id == NR_creat || id == NR_openat ||
         id == NR_openat2 || id == NR_unlink || id == NR_unlinkat ||
         id == NR_rmdir || id == NR_rename || id == NR_renameat ||
         id == NR_renameat2 || id == NR_link || id == NR_linkat ||
         id == NR_truncate || id == NR_chmod || id == NR_fchmodat ||
         id == NR_fchmodat2 || id == NR_chown || id == NR_lchown ||
         id == NR_fchownat || id == NR_utimensat || id == NR_utimes ||
         id == NR_utime || id == NR_futimesat;
}

/* The number of the system call returning (sys_exit has no id). */
static __always_inline long syscall_of(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
  return regs->orig_ax;
#else
  return regs->syscallno;
#endif
}

/* Whether a system call may change a file at all (the test every call of
 * every process pays). */
static __always_inline bool may_write(long id)
{
  return id == NR_write || id == NR_pwrite64 || id == NR_writev ||
         id == NR_pwritev || id == NR_pwritev2 || id == NR_ftruncate ||
         id == NR_fallocate || id == NR_fchmod || id == NR_fchown ||
         id == NR_copy_file_range || id == NR_sendfile || id == NR_splice ||
         keeps(id);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(write_enter, struct pt_regs *regs, long id)
{
  __u64 pid_tgid;
  struct allox_task *t;
  __u32 tgid, tid;
  long a1, a2, a3, a4;

  if (id < 0 || !may_write(id))
    return 0;
  pid_tgid = bpf_get_current_pid_tgid();
  tgid = pid_tgid >> 32;
  tid = (__u32)pid_tgid;
  t = bpf_map_lookup_elem(&tasks, &tgid);
  if (!t)
    return 0;
  a1 = PT_REGS_PARM1_CORE_SYSCALL(regs);
  a2 = PT_REGS_PARM2_CORE_SYSCALL(regs);

  /* Through a descriptor. */
  if (id == NR_write || id == NR_pwrite64 || id == NR_writev ||
      id == NR_pwritev || id == NR_pwritev2 || id == NR_fallocate ||
      id == NR_sendfile)
    record_fd_write(t, tgid, a1);
  else if (id == NR_copy_file_range || id == NR_splice)
    record_write(t, tgid, fd_inode(PT_REGS_PARM3_CORE_SYSCALL(regs)),
                 ALLOX_WRITE_DATA);
  else if (id == NR_ftruncate)
    record_write(t, tgid, fd_inode(a1), ALLOX_WRITE_TRUNCATE);
  else if (id == NR_fchmod || id == NR_fchown)
    record_write(t, tgid, fd_inode(a1), ALLOX_WRITE_SETATTR);
  /* Opens: their descriptor exists at the exit. */
  else if (id == NR_open)
    keep_open(tid, (__u32)a2);
  else if (id == NR_creat)
    keep_open(tid, ALLOX_O_TRUNC);
  else if (id == NR_openat)
    keep_open(tid, (__u32)PT_REGS_PARM3_CORE_SYSCALL(regs));
  else if (id == NR_openat2) {
    /* struct open_how starts with its u64 flags. */
    __u64 how = 0;

    bpf_probe_read_user(&how, sizeof(how),
                        (void *)PT_REGS_PARM3_CORE_SYSCALL(regs));
    keep_open(tid, (__u32)how);
  }
  /* By name, relative to the working directory. */
  else if (id == NR_unlink)
    keep_path(tid, ALLOX_WRITE_UNLINK, ALLOX_AT_FDCWD, (const char *)a1);
  else if (id == NR_rmdir)
    keep_path(tid, ALLOX_WRITE_RMDIR, ALLOX_AT_FDCWD, (const char *)a1);
  else if (id == NR_truncate)
    keep_path(tid, ALLOX_WRITE_TRUNCATE, ALLOX_AT_FDCWD, (const char *)a1);
  else if (id == NR_chmod || id == NR_chown || id == NR_lchown ||
           id == NR_utimes || id == NR_utime)
    keep_path(tid, ALLOX_WRITE_SETATTR, ALLOX_AT_FDCWD, (const char *)a1);
  else if (id == NR_rename || id == NR_link) {
    keep_path(tid, id == NR_rename ? ALLOX_WRITE_RENAME : ALLOX_WRITE_LINK,
              ALLOX_AT_FDCWD, (const char *)(id == NR_rename ? a1 : a2));
    if (id == NR_rename)
      keep_path(tid | ALLOX_PENDING_SECOND, ALLOX_WRITE_REPLACE,
                ALLOX_AT_FDCWD, (const char *)a2);
  }
  /* By name, relative to a directory descriptor. */
  else if (id == NR_unlinkat) {
    a3 = PT_REGS_PARM3_CORE_SYSCALL(regs);
    keep_path(tid,
              (a3 & ALLOX_AT_REMOVEDIR) ? ALLOX_WRITE_RMDIR
                                        : ALLOX_WRITE_UNLINK,
              a1, (const char *)a2);
  } else if (id == NR_fchmodat || id == NR_fchmodat2 || id == NR_fchownat ||
             id == NR_futimesat)
    keep_path(tid, ALLOX_WRITE_SETATTR, a1, (const char *)a2);
  else if (id == NR_utimensat) {
    /* A null path is futimens on the descriptor itself. */
    if (a2)
      keep_path(tid, ALLOX_WRITE_SETATTR, a1, (const char *)a2);
    else
      record_write(t, tgid, fd_inode(a1), ALLOX_WRITE_SETATTR);
  } else if (id == NR_renameat || id == NR_renameat2 || id == NR_linkat) {
    a3 = PT_REGS_PARM3_CORE_SYSCALL(regs);
    a4 = PT_REGS_PARM4_CORE_SYSCALL(regs);
    if (id == NR_linkat) {
      keep_path(tid, ALLOX_WRITE_LINK, a3, (const char *)a4);
    } else {
      keep_path(tid, ALLOX_WRITE_RENAME, a1, (const char *)a2);
      keep_path(tid | ALLOX_PENDING_SECOND, ALLOX_WRITE_REPLACE, a3,
                (const char *)a4);
    }
  }
  return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(write_exit, struct pt_regs *regs, long ret)
{
  struct allox_write_path_event *kept;
  struct allox_task *t;
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tgid = pid_tgid >> 32;
  __u32 tid = (__u32)pid_tgid;
  __u32 second = tid | ALLOX_PENDING_SECOND;
  struct file *f;
  __u32 mode;

  /* Only the calls sys_enter keeps something for: every other call of
   * every process leaves here without a map lookup. */
  if (!keeps(syscall_of(regs)))
    return 0;
  t = bpf_map_lookup_elem(&tasks, &tgid);
  if (!t)
    return 0;
  kept = bpf_map_lookup_elem(&write_pending, &tid);
  if (!kept)
    return 0;
  if (ret >= 0 && kept->op == ALLOX_PENDING_OPEN) {
    f = fd_file(ret);
    mode = f ? BPF_CORE_READ(f, f_mode) : 0;
    if (mode & ALLOX_FMODE_WRITE) {
      struct inode *inode = BPF_CORE_READ(f, f_inode);

      /* O_TRUNC on a file the open created truncates nothing. */
      if (mode & ALLOX_FMODE_CREATED)
        record_write(t, tgid, inode, ALLOX_WRITE_CREATE);
      else if (kept->flags & ALLOX_O_TRUNC)
        record_write(t, tgid, inode, ALLOX_WRITE_TRUNCATE);
      record_write(t, tgid, inode, ALLOX_WRITE_DATA);
    }
  } else if (ret == 0) {
    send_path(t, tgid, kept);
    kept = bpf_map_lookup_elem(&write_pending, &second);
    if (kept)
      send_path(t, tgid, kept);
  }
  bpf_map_delete_elem(&write_pending, &tid);
  bpf_map_delete_elem(&write_pending, &second);
  return 0;
}

SEC("tp_btf/btrfs_inode_new")
int BPF_PROG(write_new_inode, const struct inode *inode)
{
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  struct allox_task *t = bpf_map_lookup_elem(&tasks, &tgid);
  __u32 fmt, op;

  if (!t)
    return 0;
  fmt = BPF_CORE_READ(inode, i_mode) & ALLOX_S_IFMT;
  op = fmt == ALLOX_S_IFDIR   ? ALLOX_WRITE_MKDIR
       : fmt == ALLOX_S_IFLNK ? ALLOX_WRITE_SYMLINK
       : fmt == ALLOX_S_IFREG ? ALLOX_WRITE_CREATE
                              : ALLOX_WRITE_MKNOD;
  record_write(t, tgid, inode, op);
  return 0;
}
