// SPDX-License-Identifier: Apache-2.0
#include "guest/sandbox/spawn.hpp"

#include "guest/os/sched.hpp"
#include "guest/os/unique_fd.hpp"
#include "guest/sandbox/bwrap_args.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace allox::sandbox {
namespace {

/// What the child reads between clone3 and execve. It shares the parent's
/// memory, so it also hands back why an exec failed.
struct exec_plan {
  char** argv;
  char** envp;
  int stdin_fd, stdout_fd, stderr_fd;
  int netns_fd;
  int status_fd;
  /// The daemon's oom_score_adj is negative (its unit protects it): the
  /// run starts at 0, so an OOM killer picks a run over the daemon.
  bool reset_oom_score;
  int exec_errno = 0;
};

/// Whether this process is protected from the OOM killer (read once: the
/// unit sets it before the daemon starts).
bool oom_protected() {
  static const bool yes = os::own_oom_score_adj() < 0;
  return yes;
}

/// The child: wire stdio, default signal handling, exec. It runs on its
/// own stack in the parent's memory, so it only makes raw system calls and
/// never returns into the parent's frames.
int exec_child(void* arg) {
  auto* plan = static_cast<exec_plan*>(arg);
  // A handler of the daemon's must not run in the child (it would run on
  // the daemon's memory), and a run starts with every disposition at its
  // default (exec keeps ignored ones): each goes back to SIG_DFL before
  // the mask the parent blocked them with is lifted.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_DFL)
      ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  // The child is a task of its own (no CLONE_THREAD), so joining the
  // session's namespace leaves the daemon's thread where it was.
  if (plan->netns_fd >= 0 && ::setns(plan->netns_fd, CLONE_NEWNET) != 0) {
    plan->exec_errno = errno;
    return 126;
  }
  if (plan->reset_oom_score) {
    // Raising one's own score needs no privilege.
    int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      (void)!::write(fd, "0", 1);
      ::close(fd);
    }
  }
  ::dup2(plan->stdin_fd, 0);
  ::dup2(plan->stdout_fd, 1);
  ::dup2(plan->stderr_fd, 2);
  // Last: stdio has been copied, so fd 3 may be overwritten. dup2 onto
  // itself would keep close-on-exec set.
  if (plan->status_fd == status_fd_number)
    ::fcntl(status_fd_number, F_SETFD, 0);
  else if (plan->status_fd >= 0)
    ::dup2(plan->status_fd, status_fd_number);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(plan->argv[0], plan->argv, plan->envp);
  plan->exec_errno = errno;
  return 126;
}

#if defined(__x86_64__)
// clone3 with CLONE_VM: the child starts on the stack given in the
// arguments, so it cannot return through the syscall() wrapper the way a
// copied address space allows; this stub calls fn(arg) there and exits
// with its result. The parent returns the child's pid (or -errno).
extern "C" long allox_clone3_vm(clone_args* args, size_t size, int (*fn)(void*),
                                void* arg);
asm(R"(
  .text
  .p2align 4
  .type allox_clone3_vm, @function
allox_clone3_vm:
  mov %rdx, %r8
  mov %rcx, %r9
  mov $435, %eax
  syscall
  test %rax, %rax
  jz 1f
  ret
1:
  xor %ebp, %ebp
  mov %r9, %rdi
  call *%r8
  mov %eax, %edi
  mov $60, %eax
  syscall
  hlt
  .size allox_clone3_vm, .-allox_clone3_vm
)");
constexpr bool shares_memory = true;
#else
constexpr bool shares_memory = false;
#endif

/// The child's stack, unmapped once it has exec'd (the parent resumes
/// only then: CLONE_VFORK).
class child_stack {
public:
  static constexpr size_t size = 64 * 1024;
  child_stack()
      : base_(::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0)) {}
  ~child_stack() {
    if (base_ != MAP_FAILED)
      ::munmap(base_, size);
  }
  child_stack(const child_stack&) = delete;
  child_stack& operator=(const child_stack&) = delete;
  explicit operator bool() const { return base_ != MAP_FAILED; }
  void* base() const { return base_; }

private:
  void* base_;
};

/// Blocks every signal of the calling thread for its lifetime: no handler
/// may run in a child that shares the daemon's memory.
class all_signals_blocked {
public:
  // The raw call: the C library's would leave its own two signals open.
  all_signals_blocked() {
    sigset_t all;
    sigfillset(&all);
    ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &saved_, kernel_sigset);
  }
  ~all_signals_blocked() {
    ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &saved_, nullptr, kernel_sigset);
  }
  all_signals_blocked(const all_signals_blocked&) = delete;
  all_signals_blocked& operator=(const all_signals_blocked&) = delete;

private:
  static constexpr size_t kernel_sigset = (NSIG - 1) / 8;
  sigset_t saved_;
};

} // namespace

expected<child> spawn_in_cgroup(int cgroup_fd,
                                const std::vector<std::string>& argv,
                                int stdin_fd, int stdout_fd, int stderr_fd,
                                int netns_fd, int status_fd) {
  // Everything the child needs is prepared before clone3: after it, the
  // child may only make async-signal-safe calls before execve.
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char path_env[] = "PATH=/usr/bin:/bin";
  char* envp[] = {path_env, nullptr};
  os::unique_fd devnull;
  if (stdin_fd < 0) {
    devnull.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!devnull)
      return sys_error("open /dev/null");
    stdin_fd = devnull.get();
  }
  exec_plan plan{args.data(), envp,     stdin_fd,  stdout_fd,
                 stderr_fd,   netns_fd, status_fd, oom_protected()};
  int pidfd = -1;
  clone_args ca{};
  ca.flags = CLONE_INTO_CGROUP | CLONE_PIDFD;
  ca.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  ca.exit_signal = SIGCHLD;
  ca.cgroup = static_cast<uint64_t>(cgroup_fd);
  long pid;
  if constexpr (shares_memory) {
    // CLONE_VM | CLONE_VFORK, as posix_spawn does: copying the daemon's
    // page tables for a child that execs at once was most of a start's
    // cost over bwrap's own. This thread waits until the exec.
    child_stack stack;
    if (!stack)
      return sys_error("map the spawn stack");
    ca.flags |= CLONE_VM | CLONE_VFORK;
    ca.stack = reinterpret_cast<uint64_t>(stack.base());
    ca.stack_size = child_stack::size;
    all_signals_blocked blocked;
    pid = allox_clone3_vm(&ca, sizeof(ca), exec_child, &plan);
    if (pid < 0) {
      errno = static_cast<int>(-pid);
      pid = -1;
    }
  } else {
    pid = ::syscall(SYS_clone3, &ca, sizeof(ca));
    if (pid == 0)
      ::_exit(exec_child(&plan));
  }
  if (pid < 0)
    return sys_error("clone3 into the session cgroup");
  if (plan.exec_errno != 0) {
    // The child shared our memory and told us why execve failed.
    siginfo_t info{};
    ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED);
    if (pidfd >= 0)
      ::close(pidfd);
    errno = plan.exec_errno;
    return sys_error("execute " + argv.front());
  }
  child c;
  c.pid = static_cast<pid_t>(pid);
  c.pidfd.reset(pidfd);
  return c;
}

int wait_child(const child& c, int release_fd) {
  if (release_fd >= 0) {
    pollfd fds[2] = {{c.pidfd.get(), POLLIN, 0}, {release_fd, POLLIN, 0}};
    for (;;) {
      int n = ::poll(fds, 2, -1);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 || fds[0].revents != 0)
        break;
      if (fds[1].revents != 0)
        return released;
    }
  }
  siginfo_t info{};
  for (;;) {
    if (::waitid(P_PIDFD, static_cast<id_t>(c.pidfd.get()), &info, WEXITED) ==
        0)
      break;
    if (errno != EINTR)
      return -1;
  }
  if (info.si_code == CLD_EXITED)
    return info.si_status;
  return 128 + info.si_status;
}

} // namespace allox::sandbox
