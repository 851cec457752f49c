// SPDX-License-Identifier: Apache-2.0
// Process shapes the tracking tests need and a shell cannot make:
//   thread-exec PATH [ARG...]  a second thread execs PATH (the kernel
//                              makes it the leader; same process)
//   double-fork PATH [ARG...]  fork, setsid, fork again, exec PATH with an
//                              empty environment; both parents exit
//   spawn N PATH [ARG...]      start N children of PATH at once, wait all
//   write-all DIR              change files in DIR every way write
//                              provenance records (see write_all below)
//   write-loop FILE N          N writes of 4 KiB through one descriptor,
//                              then N open/write/close of the same file
//   write-after FILE GO        writes FILE, waits for GO to exist, writes
//                              FILE again (the same process, twice)
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

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

// -- write provenance ---------------------------------------------------

std::string dir;

std::string at(const char* name) {
  return dir + "/" + name;
}

/// Exits 1 naming the step that failed (the test prints the status).
void must(bool ok, const char* what) {
  if (!ok) {
    std::perror(what);
    std::_Exit(1);
  }
}

void* write_from_thread(void*) {
  int fd = ::open(at("thread.txt").c_str(), O_WRONLY | O_CREAT, 0644);
  must(fd >= 0 && ::write(fd, "t", 1) == 1, "thread write");
  ::close(fd);
  return nullptr;
}

/// Each file is changed one way, so the test can tell the records apart.
/// The test creates the files this changes beforehand (untracked).
int write_all() {
  int fd = ::open(at("created.txt").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  must(fd >= 0 && ::write(fd, "c", 1) == 1, "write");
  ::close(fd);

  fd = ::open(at("pwrite.txt").c_str(), O_RDWR);
  must(fd >= 0 && ::pwrite(fd, "p", 1, 1) == 1, "pwrite");
  ::close(fd);

  fd = ::open(at("writev.txt").c_str(), O_WRONLY | O_APPEND);
  char a[] = "ab";
  iovec v[2] = {{a, 1}, {a + 1, 1}};
  must(fd >= 0 && ::writev(fd, v, 2) == 2, "writev");
  ::close(fd);

  fd = ::open(at("mmap.txt").c_str(), O_RDWR);
  must(fd >= 0, "open mmap.txt");
  void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  must(p != MAP_FAILED, "mmap");
  static_cast<char*>(p)[0] = 'm';
  must(::msync(p, 4096, MS_SYNC) == 0, "msync");
  ::munmap(p, 4096);
  ::close(fd);

  fd = ::open(at("trunc.txt").c_str(), O_WRONLY | O_TRUNC);
  must(fd >= 0, "O_TRUNC");
  ::close(fd);

  must(::truncate(at("shrink.txt").c_str(), 1) == 0, "truncate");
  must(::chmod(at("chmod.txt").c_str(), 0600) == 0, "chmod");

  fd = ::open(at("new.txt").c_str(), O_WRONLY | O_CREAT, 0644);
  must(fd >= 0 && ::write(fd, "n", 1) == 1, "write new.txt");
  ::close(fd);
  must(::rename(at("new.txt").c_str(), at("old.txt").c_str()) == 0,
       "rename over");

  must(::unlink(at("gone.txt").c_str()) == 0, "unlink");
  must(::link(at("linked.txt").c_str(), at("hardlink.txt").c_str()) == 0,
       "link");
  must(::symlink("linked.txt", at("symlink").c_str()) == 0, "symlink");
  must(::mkdir(at("dir").c_str(), 0755) == 0, "mkdir");
  must(::rmdir(at("emptydir").c_str()) == 0, "rmdir");

  pthread_t t;
  must(::pthread_create(&t, nullptr, write_from_thread, nullptr) == 0,
       "pthread_create");
  ::pthread_join(t, nullptr);

  // A double-forked setsid child writes after its parents are gone.
  pid_t first = ::fork();
  if (first == 0) {
    ::setsid();
    pid_t second = ::fork();
    if (second == 0) {
      ::usleep(50 * 1000);
      int f = ::open(at("orphan.txt").c_str(), O_WRONLY | O_CREAT, 0644);
      must(f >= 0 && ::write(f, "o", 1) == 1, "orphan write");
      std::_Exit(0);
    }
    std::_Exit(second < 0 ? 1 : 0);
  }
  int status = 0;
  ::waitpid(first, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int write_loop(const char* file, int n) {
  static char block[4096];
  int fd = ::open(file, O_WRONLY | O_CREAT, 0644);
  must(fd >= 0, "open");
  for (int i = 0; i < n; ++i)
    must(::pwrite(fd, block, sizeof(block), 0) == sizeof(block), "pwrite");
  ::close(fd);
  for (int i = 0; i < n; ++i) {
    fd = ::open(file, O_WRONLY);
    must(fd >= 0 && ::write(fd, block, 1) == 1, "write");
    ::close(fd);
  }
  return 0;
}

int write_after(const char* file, const char* go) {
  for (int round = 0; round < 2; ++round) {
    int fd = ::open(file, O_WRONLY | O_CREAT, 0644);
    must(fd >= 0 && ::write(fd, "x", 1) == 1, "write");
    ::close(fd);
    for (int i = 0; round == 0 && ::access(go, F_OK) != 0; ++i) {
      if (i == 1000)
        return 1; // 10 s
      ::usleep(10 * 1000);
    }
  }
  return 0;
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
  if (argc == 3 && std::strcmp(argv[1], "write-all") == 0) {
    dir = argv[2];
    return write_all();
  }
  if (argc == 4 && std::strcmp(argv[1], "write-loop") == 0)
    return write_loop(argv[2], std::atoi(argv[3]));
  if (argc == 4 && std::strcmp(argv[1], "write-after") == 0)
    return write_after(argv[2], argv[3]);
  std::fprintf(
      stderr,
      "usage: %s thread-exec|double-fork|spawn N PATH "
      "[ARG...] | write-all DIR | write-loop FILE N | write-after FILE GO\n",
      argv[0]);
  return 2;
}
