// SPDX-License-Identifier: Apache-2.0
// allox-write-bench: what write provenance costs the writers, on the real
// kernel and a scratch Btrfs (docs/benchmarks.md, "Write provenance").
// Each round runs every workload in four modes, in a rotating order:
//   none        no probe loaded (the raw baseline)
//   tracked     the process probe without write provenance, run tracked
//   provenance  the probe with write provenance, run tracked
//   untracked   the probe with write provenance, run not tracked (what
//               every other process of the machine pays)
// Workloads (shell-free, timed from spawn to exit):
//   write-loop  N pwrites of 4 KiB through one descriptor
//   open-loop   N files, each open(O_CREAT)/write 100 bytes/close
//   build       make -j2 of a generated C project of 24 files
// It also reports the reader's CPU per 1,000 records/s and the losses of
// the provenance mode; --bpf-stats adds the programs' run time per call.
// Needs root and a free loop device.
#include "bench/scratch_group.hpp"
#include "bpf/loader.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"
#include "guest/os/loop_mount.hpp"
#include "guest/os/mountinfo.hpp"
#include "guest/sandbox/spawn.hpp"
#include "messages/ids.hpp"
#include "tracking/reader.hpp"

#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>

using namespace allox;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

// -- the workloads, run as this binary's children ---------------------------

int write_loop(const std::string& file, long n) {
  static char block[4096];
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return 1;
  for (long i = 0; i < n; ++i)
    if (::pwrite(fd, block, sizeof(block), (i % 256) * 4096) != 4096)
      return 1;
  ::close(fd);
  return 0;
}

int open_loop(const std::string& dir, long n) {
  static const char line[100] = {};
  for (long i = 0; i < n; ++i) {
    auto path = dir + "/f" + std::to_string(i);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::write(fd, line, sizeof(line)) != sizeof(line))
      return 1;
    ::close(fd);
  }
  return 0;
}

/// A small C project: 24 sources of a few functions each and a Makefile.
void make_project(const std::string& dir) {
  (void)os::make_dirs(dir);
  std::ofstream mk{dir + "/Makefile"};
  mk << "OBJS = $(patsubst %.c,%.o,$(wildcard *.c))\n"
        "app: $(OBJS)\n\tcc -o $@ $(OBJS)\n"
        "%.o: %.c\n\tcc -O2 -c $< -o $@\n"
        "clean:\n\trm -f *.o app\n";
  for (int i = 0; i < 24; ++i) {
    std::ofstream c{dir + "/m" + std::to_string(i) + ".c"};
    c << "#include <stdio.h>\n#include <string.h>\n";
    for (int f = 0; f < 12; ++f)
      c << "int m" << i << "_" << f << "(const char *s) { int h = 0; "
        << "for (size_t k = 0; k < strlen(s); ++k) h = h * 31 + s[k]; "
        << "return h ^ " << f << "; }\n";
    if (i == 0)
      c << "int main(void) { printf(\"%d\\n\", m0_0(\"x\")); return 0; }\n";
  }
}

// -- the harness -----------------------------------------------------------

/// A scratch cgroup that runs one workload at a time.
struct group : bench::scratch_group {
  group() : scratch_group("allox-writes-") {}
  /// Runs argv to its end; seconds, or a negative number on failure.
  double run(const std::vector<std::string>& argv) {
    auto t0 = clock_type::now();
    auto c = start(argv);
    if (!c)
      return -1;
    int status = sandbox::wait_child(*c);
    (void)os::wait_empty(path, 60000);
    return status == 0 ? seconds_since(t0) : -1;
  }
};

/// A probe (with or without write provenance) and a reader counting what
/// arrives.
struct probe_and_reader {
  explicit probe_and_reader(bool writes) {
    bpf::probe_options opts;
    opts.writes = writes;
    opts.ring_bytes = 1u << 20;
    auto p = bpf::process_probe::open(std::move(opts));
    if (!p)
      throw std::runtime_error(message_of(p.error()));
    probe = std::move(*p);
    if (writes && !probe->writes_on())
      throw std::runtime_error("write provenance did not load: " +
                               probe->writes_error());
    tracking::reader_options ropts;
    ropts.min_batch_interval_ms = 20; // as the TRACKER
    auto r = tracking::ring_reader::start(
        *probe, [this](tracking::event_batch b) { records += b.events.size(); },
        nullptr, std::move(ropts));
    if (!r)
      throw std::runtime_error(message_of(r.error()));
    reader = std::move(*r);
  }
  ~probe_and_reader() { reader->stop(); }

  std::unique_ptr<bpf::process_probe> probe;
  std::unique_ptr<tracking::ring_reader> reader;
  std::atomic<uint64_t> records{0};
};

double cpu_seconds_self() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"allox-write-bench: the cost of write provenance"};
  int rounds = 7;
  long writes = 100000;
  long files = 5000;
  std::string child, target;
  long child_n = 0;
  app.add_option("--rounds", rounds, "rounds of every workload and mode");
  app.add_option("--writes", writes, "4 KiB writes of write-loop");
  app.add_option("--files", files, "files of open-loop");
  bool bpf_stats = false;
  app.add_flag("--bpf-stats", bpf_stats,
               "print the write programs' run time (slows every mode)");
  app.add_option("--child", child, "(internal) run one workload")->group("");
  app.add_option("--target", target)->group("");
  app.add_option("--n", child_n)->group("");
  CLI11_PARSE(app, argc, argv);
  if (child == "write-loop")
    return write_loop(target, child_n);
  if (child == "open-loop")
    return open_loop(target, child_n);

  char self[4096] = {};
  auto len = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0)
    return 1;
  std::string scratch = "/tmp/allox-write-bench-" + random_hex_token();
  (void)os::make_dirs(scratch);
  auto mount =
      os::loop_mount::open(scratch + "/image", 2ull << 30, scratch + "/mnt");
  if (!mount) {
    std::fprintf(stderr, "%s\n", message_of(mount.error()).c_str());
    return 1;
  }
  auto ws = scratch + "/mnt/ws";
  (void)os::create_subvolume(ws);
  make_project(ws + "/project");

  const std::vector<std::string> modes = {"none", "tracked", "provenance",
                                          "untracked"};
  const std::vector<std::string> loads = {"write-loop", "open-loop", "build"};
  std::map<std::string, std::map<std::string, std::vector<double>>> secs;
  uint64_t cookie = 1000;
  double reader_cpu = 0, reader_records = 0, reader_wall = 0;
  uint64_t lost = 0;
  // "<workload> <program>" -> (runs, ns), from BPF run-time statistics.
  std::map<std::string, std::pair<uint64_t, uint64_t>> prog_time;
  // Off by default: the statistics time every program run, which would
  // slow the modes they measure.
  expected<os::unique_fd> stats_on{os::unique_fd{}};
  if (bpf_stats)
    stats_on = bpf::enable_run_time_stats();
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < modes.size(); ++k) {
      const auto& mode = modes[(k + static_cast<size_t>(r)) % modes.size()];
      std::unique_ptr<probe_and_reader> pr;
      if (mode != "none")
        pr = std::make_unique<probe_and_reader>(mode != "tracked");
      for (const auto& load : loads) {
        group g;
        if (pr && mode != "untracked" && pr->probe->track(g.id, ++cookie))
          return 1;
        std::vector<std::string> cmd;
        if (load == "build") {
          (void)::system(("make -s -C " + ws + "/project clean").c_str());
          cmd = {"/usr/bin/make", "-s", "-j2", "-C", ws + "/project"};
        } else {
          auto dir = ws + "/" + load + "-" + std::to_string(r);
          (void)os::make_dirs(dir);
          cmd = {self,
                 "--child",
                 load,
                 "--target",
                 load == "write-loop" ? dir + "/file" : dir,
                 "--n",
                 std::to_string(load == "write-loop" ? writes : files)};
        }
        ::sync();
        auto records0 = pr ? pr->records.load() : 0;
        auto cpu0 = cpu_seconds_self();
        double s = g.run(cmd);
        if (s < 0) {
          std::fprintf(stderr, "%s failed in mode %s\n", load.c_str(),
                       mode.c_str());
          return 1;
        }
        secs[load][mode].push_back(s);
        if (pr && mode == "provenance") {
          for (const auto& p : pr->probe->stats())
            if (p.name.rfind("write_", 0) == 0) {
              auto& acc = prog_time[load + " " + p.name];
              acc.first += p.runs;
              acc.second += p.run_ns;
            }
          pr->reader->hurry();
          std::this_thread::sleep_for(std::chrono::milliseconds{50});
          reader_cpu += cpu_seconds_self() - cpu0;
          reader_records += static_cast<double>(pr->records.load() - records0);
          reader_wall += s;
          if (auto c = pr->probe->counters(cookie))
            lost += c->writes_lost;
        }
        if (pr && mode != "untracked")
          (void)pr->probe->untrack(g.id);
      }
    }
    std::fprintf(stderr, "round %d of %d done\n", r + 1, rounds);
  }

  std::printf("| workload | none (raw) | tracked, no provenance | tracked, "
              "provenance | untracked, provenance loaded | provenance / "
              "tracked | provenance / none |\n|---|---|---|---|---|---|---|\n");
  for (const auto& load : loads) {
    auto m = [&](const char* mode) {
      return median(secs[load][mode]);
    };
    std::printf(
        "| %s | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.3f | %.3f |\n",
        load.c_str(), m("none") * 1e3, m("tracked") * 1e3,
        m("provenance") * 1e3, m("untracked") * 1e3,
        m("provenance") / m("tracked"), m("provenance") / m("none"));
  }
  std::printf("\nmedians of %d rounds; write-loop %ld writes of 4 KiB, "
              "open-loop %ld files, build = make -j2 of 24 files.\n",
              rounds, writes, files);
  if (reader_wall > 0 && reader_records > 0)
    std::printf("reader: %.0f records in %.2f s of runs, %.1f ms CPU, "
                "%.2f ms CPU per 1,000 records; write records lost: %llu\n",
                reader_records, reader_wall, reader_cpu * 1e3,
                reader_cpu * 1e3 / (reader_records / 1000),
                static_cast<unsigned long long>(lost));
  if (bpf_stats && stats_on) {
    std::printf("\nBPF time per call in the provenance mode (kernel "
                "run-time statistics, cumulative over the probe):\n");
    for (const auto& [name, t] : prog_time)
      if (t.first > 0)
        std::printf("- %s: %llu calls, %.0f ns per call\n", name.c_str(),
                    static_cast<unsigned long long>(t.first),
                    static_cast<double>(t.second) /
                        static_cast<double>(t.first));
  }
  (void)mount->unmount();
  (void)os::remove_tree(scratch);
  return 0;
}
