// SPDX-License-Identifier: Apache-2.0
// allox-sandbox-init: PID 1 of a run's PID namespace, inside Bubblewrap.
//
//   allox-sandbox-init -- <argv...>
//
// 1. Seeds the private /tmp from /workspace/.allox-tmp.
// 2. Runs the target and reaps every orphan re-parented to it, staying
//    alive until no process of the run is left: when PID 1 exits the
//    kernel kills the namespace, so this is what lets double-forked and
//    setsid descendants live on.
// 3. If the target exited (was not killed), replaces /workspace/.allox-tmp
//    with /tmp: regular files, directories and symlinks only; sockets,
//    FIFOs and devices never reach the workspace.
// 4. Exits with the target's status (128 + signal if it was killed).
//    With --status-fd N it first writes that status, in decimal, to fd N
//    (the run's `exit` file, opened by the daemon): a daemon restarted
//    while the run went on learns the status there, since it is not the
//    parent that reaps bubblewrap (docs/architecture.md, "Runs").
//
// With --uid/--gid it first becomes the sandbox user for good
// (tools/sandbox-init/identity.hpp): everything above runs as that user. The
// target starts under the run's seccomp filter
// (tools/sandbox-init/syscall_filter.hpp) unless --no-syscall-filter is given.
//
// It runs with the sandboxed program's own rights in the same mount
// namespace, so no file the program planted can make the sync write
// anywhere the program could not write itself. Symlinks are copied, never
// followed.
#include "tools/sandbox-init/identity.hpp"
#include "tools/sandbox-init/syscall_filter.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void warn(const std::string& what) {
  std::fprintf(stderr, "allox-sandbox-init: %s: %s\n", what.c_str(),
               std::strerror(errno));
}

bool copy_file(int src_dir, const char* name, int dst_dir, mode_t mode) {
  int in = ::openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0)
    return false;
  int out = ::openat(dst_dir, name,
                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                     mode & 07777);
  if (out < 0) {
    ::close(in);
    return false;
  }
  char buf[65536];
  bool ok = true;
  for (;;) {
    auto n = ::read(in, buf, sizeof(buf));
    if (n == 0)
      break;
    if (n < 0 || ::write(out, buf, static_cast<size_t>(n)) != n) {
      ok = false;
      break;
    }
  }
  ::close(in);
  ::close(out);
  return ok;
}

/// Copies the tree below src_dir into dst_dir (both open directories):
/// files, directories and symlinks; everything else is skipped.
void copy_tree(int src_dir, int dst_dir) {
  int dup = ::dup(src_dir);
  DIR* d = ::fdopendir(dup);
  if (d == nullptr) {
    ::close(dup);
    return;
  }
  while (auto* e = ::readdir(d)) {
    const char* name = e->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0)
      continue;
    struct stat st {};
    if (::fstatat(src_dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    if (S_ISREG(st.st_mode)) {
      copy_file(src_dir, name, dst_dir, st.st_mode);
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      auto n = ::readlinkat(src_dir, name, target, sizeof(target) - 1);
      if (n >= 0) {
        target[n] = '\0';
        ::symlinkat(target, dst_dir, name);
      }
    } else if (S_ISDIR(st.st_mode)) {
      if (::mkdirat(dst_dir, name, st.st_mode & 07777) != 0)
        continue;
      int s = ::openat(src_dir, name,
                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      int t = ::openat(dst_dir, name,
                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (s >= 0 && t >= 0)
        copy_tree(s, t);
      if (s >= 0)
        ::close(s);
      if (t >= 0)
        ::close(t);
    }
    // Sockets, FIFOs and device nodes stay behind.
  }
  ::closedir(d);
}

/// Removes a tree without following symlinks.
void remove_tree(int parent, const char* name) {
  if (::unlinkat(parent, name, 0) == 0 || errno == ENOENT)
    return;
  int dir =
      ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0)
    return;
  int dup = ::dup(dir);
  DIR* d = ::fdopendir(dup);
  if (d != nullptr) {
    std::vector<std::string> names;
    while (auto* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        names.emplace_back(e->d_name);
    ::closedir(d);
    for (const auto& n : names)
      remove_tree(dir, n.c_str());
  } else {
    ::close(dup);
  }
  ::close(dir);
  ::unlinkat(parent, name, AT_REMOVEDIR);
}

int open_dir(const char* path) {
  return ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

void seed_tmp() {
  int src = open_dir("/workspace/.allox-tmp");
  int dst = open_dir("/tmp");
  if (src >= 0 && dst >= 0)
    copy_tree(src, dst);
  if (src >= 0)
    ::close(src);
  if (dst >= 0)
    ::close(dst);
}

void sync_tmp() {
  int ws = open_dir("/workspace");
  int tmp = open_dir("/tmp");
  if (ws < 0 || tmp < 0) {
    warn("cannot open /workspace or /tmp for the sync");
    return;
  }
  remove_tree(ws, ".allox-tmp.new");
  if (::mkdirat(ws, ".allox-tmp.new", 0700) != 0) {
    warn("mkdir .allox-tmp.new");
    return;
  }
  int fresh = ::openat(ws, ".allox-tmp.new",
                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fresh < 0)
    return;
  copy_tree(tmp, fresh);
  ::fchmod(fresh, 0700);
  ::close(fresh);
  remove_tree(ws, ".allox-tmp");
  if (::renameat(ws, ".allox-tmp.new", ws, ".allox-tmp") != 0)
    warn("rename .allox-tmp.new");
  ::close(ws);
  ::close(tmp);
}

/// Writes the run's final status to the daemon's `exit` file, if given.
void report_status(int fd, int code) {
  if (fd < 0)
    return;
  char text[16];
  int n = std::snprintf(text, sizeof text, "%d\n", code);
  if (::write(fd, text, static_cast<size_t>(n)) != n)
    warn("cannot record the run's status");
  ::close(fd);
}

} // namespace

int main(int argc, char** argv) {
  // --no-syscall-filter: the daemon runs with --syscall-filter off.
  // --uid N --gid N: the sandbox user (--sandbox-user) to become.
  // --status-fd N: where the final status goes.
  bool filter = true;
  long uid = -1;
  long gid = -1;
  int status_fd = -1;
  while (argc > 1 && std::strcmp(argv[1], "--") != 0) {
    if (std::strcmp(argv[1], "--no-syscall-filter") == 0) {
      filter = false;
      --argc;
      ++argv;
    } else if (argc > 2 && (std::strcmp(argv[1], "--uid") == 0 ||
                            std::strcmp(argv[1], "--gid") == 0)) {
      (argv[1][2] == 'u' ? uid : gid) = std::strtol(argv[2], nullptr, 10);
      argc -= 2;
      argv += 2;
    } else if (argc > 2 && std::strcmp(argv[1], "--status-fd") == 0) {
      status_fd = static_cast<int>(std::strtol(argv[2], nullptr, 10));
      argc -= 2;
      argv += 2;
    } else {
      break;
    }
  }
  if (argc < 3 || std::strcmp(argv[1], "--") != 0 || (uid < 0) != (gid < 0)) {
    std::fprintf(stderr, "usage: allox-sandbox-init [--no-syscall-filter] "
                         "[--uid N --gid N] [--status-fd N] -- <argv...>\n");
    return 125;
  }
  // The target never inherits the status file.
  if (status_fd >= 0 && ::fcntl(status_fd, F_SETFD, FD_CLOEXEC) != 0)
    status_fd = -1;
  // First of all: nothing of the run, not even the /tmp seeding, happens
  // with the rights bubblewrap started us with.
  if (uid >= 0)
    if (int rc = allox::sandbox::become(static_cast<uid_t>(uid),
                                        static_cast<gid_t>(gid));
        rc < 0) {
      errno = -rc;
      warn("cannot become the sandbox user");
      return 125;
    }
  seed_tmp();
  pid_t target = ::fork();
  if (target < 0) {
    warn("fork");
    return 125;
  }
  if (target == 0) {
    // Only the target and its descendants: this process is PID 1 and
    // needs none of what the filter refuses either way.
    if (filter)
      if (int rc = allox::sandbox::install_syscall_filter(); rc < 0) {
        errno = -rc;
        warn("cannot install the syscall filter");
        ::_exit(125);
      }
    ::execvp(argv[2], argv + 2);
    std::fprintf(stderr, "allox-sandbox-init: cannot run %s: %s\n", argv[2],
                 std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  bool target_done = false;
  for (;;) {
    int st = 0;
    pid_t pid = ::waitpid(-1, &st, 0);
    if (pid < 0) {
      if (errno == EINTR)
        continue;
      break; // ECHILD: nothing of the run is left
    }
    if (pid == target) {
      status = st;
      target_done = true;
    }
  }
  int code = 125;
  if (target_done && WIFSIGNALED(status)) {
    code = 128 + WTERMSIG(status);
  } else if (target_done) {
    sync_tmp();
    code = WEXITSTATUS(status);
  }
  report_status(status_fd, code);
  return code;
}
