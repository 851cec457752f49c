// SPDX-License-Identifier: Apache-2.0
// Process shapes the tracking tests need and a shell cannot make:
//   thread-exec PATH [ARG...]  a second thread execs PATH (the kernel
//                              makes it the leader; same process)
//   double-fork PATH [ARG...]  fork, setsid, fork again, exec PATH with an
//                              empty environment; both parents exit
//   spawn N PATH [ARG...]      start N children of PATH at once, wait all
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

char** exec_args = nullptr;

void* exec_from_thread(void*) {
  ::execv(exec_args[0], exec_args);
  std::perror("execv");
  std::_Exit(126);
}

int thread_exec() {
  pthread_t t;
  if (::pthread_create(&t, nullptr, exec_from_thread, nullptr) != 0)
    return 125;
  for (;;)
    ::pause(); // the exec ends this thread with the others
}

int double_fork() {
  pid_t first = ::fork();
  if (first < 0)
    return 125;
  if (first == 0) {
    ::setsid();
    pid_t second = ::fork();
    if (second == 0) {
      char* empty[] = {nullptr};
      ::execve(exec_args[0], exec_args, empty);
      std::_Exit(126);
    }
    std::_Exit(second < 0 ? 125 : 0);
  }
  int status = 0;
  ::waitpid(first, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 125;
}

int spawn(int n) {
  for (int i = 0; i < n; ++i) {
    pid_t pid = ::fork();
    if (pid < 0)
      return 125;
    if (pid == 0) {
      ::execv(exec_args[0], exec_args);
      std::_Exit(126);
    }
  }
  int failed = 0;
  for (int status = 0; ::wait(&status) > 0;)
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return failed == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "thread-exec") == 0) {
    exec_args = argv + 2;
    return thread_exec();
  }
  if (argc >= 3 && std::strcmp(argv[1], "double-fork") == 0) {
    exec_args = argv + 2;
    return double_fork();
  }
  if (argc >= 4 && std::strcmp(argv[1], "spawn") == 0) {
    exec_args = argv + 3;
    return spawn(std::atoi(argv[2]));
  }
  std::fprintf(stderr,
               "usage: %s thread-exec|double-fork|spawn N PATH "
               "[ARG...]\n",
               argv[0]);
  return 2;
}
