#include "guest/sandbox/spawn.hpp"

#include "guest/os/unique_fd.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace allox::sandbox {

expected<child> spawn_in_cgroup(int cgroup_fd,
                                const std::vector<std::string>& argv,
                                int stdin_fd, int stdout_fd, int stderr_fd) {
  // Everything the child needs is prepared before clone3: after it, the
  // child of a multi-threaded process may only make async-signal-safe
  // calls before execve.
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char path_env[] = "PATH=/usr/bin:/bin";
  char* envp[] = {path_env, nullptr};
  os::unique_fd devnull{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  if (!devnull)
    return sys_error("open /dev/null");
  int pidfd = -1;
  clone_args ca{};
  ca.flags = CLONE_INTO_CGROUP | CLONE_PIDFD;
  ca.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  ca.exit_signal = SIGCHLD;
  ca.cgroup = static_cast<uint64_t>(cgroup_fd);
  long pid = ::syscall(SYS_clone3, &ca, sizeof(ca));
  if (pid == 0) {
    // The child: wire stdio, restore default signal handling, exec.
    ::dup2(stdin_fd >= 0 ? stdin_fd : devnull.get(), 0);
    ::dup2(stdout_fd, 1);
    ::dup2(stderr_fd, 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(args[0], args.data(), envp);
    ::_exit(126);
  }
  if (pid < 0)
    return sys_error("clone3 into the session cgroup");
  child c;
  c.pid = static_cast<pid_t>(pid);
  c.pidfd.reset(pidfd);
  return c;
}

int wait_child(const child& c) {
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
