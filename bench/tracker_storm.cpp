// SPDX-License-Identifier: Apache-2.0
// allox-tracker-storm: the process tracker under load, on the real kernel.
//   burst      4,000 background /bin/true from one shell
//   sustained  shell loops of /bin/true for N seconds (one per core)
//   overhead   a shell loop of 3,000 /bin/true: without the probe, with
//              the probe loaded but the cgroup untracked, and tracked
// Prints markdown tables (docs/benchmarks.md). Needs root.
#include "bench/scratch_group.hpp"
#include "bpf/loader.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/mountinfo.hpp"
#include "guest/sandbox/spawn.hpp"
#include "messages/ids.hpp"
#include "tracking/reader.hpp"

#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

using namespace allox;
using clock_type = std::chrono::steady_clock;

namespace {

/// --wakeup-kib: the probe's wakeup_bytes.
uint32_t wakeup_bytes = 0;
/// reader_options::min_batch_interval_ms (the daemon's TRACKER uses 20).
int batch_ms = 0;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

/// A scratch cgroup that runs shell scripts.
struct group : bench::scratch_group {
  group() : scratch_group("allox-storm-") {}
  sandbox::child start(const std::string& script) {
    auto c = scratch_group::start({"/bin/sh", "-c", script});
    if (!c)
      throw std::runtime_error(message_of(c.error()));
    return std::move(*c);
  }
  /// Runs the script to its end and until the group is empty; seconds.
  double run(const std::string& script) {
    auto t0 = clock_type::now();
    auto c = start(script);
    sandbox::wait_child(c);
    os::wait_empty(path, 60000);
    return seconds_since(t0);
  }
};

/// A probe and a reader that counts what arrives.
struct tracker {
  explicit tracker(uint32_t ring_bytes) {
    bpf::probe_options opts;
    opts.ring_bytes = ring_bytes;
    opts.wakeup_bytes = wakeup_bytes;
    auto p = bpf::process_probe::open(std::move(opts));
    if (!p)
      throw std::runtime_error(message_of(p.error()));
    probe = std::move(*p);
    tracking::reader_options ropts;
    ropts.min_batch_interval_ms = batch_ms;
    auto r = tracking::ring_reader::start(
        *probe,
        [this](tracking::event_batch b) {
          events += b.events.size();
          batches += 1;
        },
        nullptr, std::move(ropts));
    if (!r)
      throw std::runtime_error(message_of(r.error()));
    reader = std::move(*r);
  }
  /// Waits until every record the kernel produced for `cookie` arrived.
  double drain(uint64_t cookie, uint64_t base) {
    auto t0 = clock_type::now();
    reader->hurry(); // as the TRACKER does when a run ends
    while (seconds_since(t0) < 30) {
      auto c = probe->counters(cookie);
      if (c && events - base >= c->produced)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
    return seconds_since(t0);
  }

  std::unique_ptr<bpf::process_probe> probe;
  std::unique_ptr<tracking::ring_reader> reader;
  std::atomic<uint64_t> events{0};
  std::atomic<uint64_t> batches{0};
};

std::string loss_text(const bpf::loss_counters& l) {
  std::string out;
  for (size_t i = 0; i < l.by_cause.size(); ++i)
    if (l.by_cause[i] != 0)
      out += (out.empty() ? "" : ", ") + std::string{bpf::loss_cause_name(i)} +
             " " + std::to_string(l.by_cause[i]);
  return out.empty() ? "0" : out;
}

/// Calls and ns spent in the three programs, summed.
struct bpf_time {
  uint64_t runs = 0;
  uint64_t ns = 0;
  std::array<uint64_t, 3> runs_by{};
  std::array<uint64_t, 3> ns_by{};

  void add(const std::vector<bpf::program_stats>& stats) {
    for (size_t i = 0; i < stats.size() && i < 3; ++i) {
      runs += stats[i].runs;
      ns += stats[i].run_ns;
      runs_by[i] += stats[i].runs;
      ns_by[i] += stats[i].run_ns;
    }
  }
  /// "fork 310 / exec 420 / exit 150 ns"
  std::string per_call() const {
    auto avg = [&](size_t i) {
      return runs_by[i] == 0 ? 0 : ns_by[i] / runs_by[i];
    };
    return "fork " + std::to_string(avg(0)) + " / exec " +
           std::to_string(avg(1)) + " / exit " + std::to_string(avg(2)) + " ns";
  }
};

void burst(uint32_t ring_bytes, int n) {
  tracker t{ring_bytes};
  group g;
  uint64_t cookie = 1;
  t.probe->track(g.id, cookie);
  auto t0 = clock_type::now();
  auto ran = g.run("i=0; while [ $i -lt " + std::to_string(n) +
                   " ]; do /bin/true & i=$((i+1)); done; wait");
  t.drain(cookie, 0);
  auto total = seconds_since(t0);
  auto c = *t.probe->counters(cookie);
  auto losses = *t.probe->losses();
  bpf_time bpf;
  bpf.add(t.probe->stats());
  std::printf("| %d background /bin/true | %.2f s | %.2f s | %llu | %llu | "
              "%.0f | %s | %s |\n",
              n, ran, total, static_cast<unsigned long long>(c.sequences),
              static_cast<unsigned long long>(t.events.load()),
              double(t.events.load()) / total, bpf.per_call().c_str(),
              loss_text(losses).c_str());
}

void sustained(uint32_t ring_bytes, int secs, int loops) {
  tracker t{ring_bytes};
  group g;
  uint64_t cookie = 2;
  t.probe->track(g.id, cookie);
  std::vector<sandbox::child> shells;
  auto t0 = clock_type::now();
  for (int i = 0; i < loops; ++i)
    shells.push_back(g.start("while :; do /bin/true; done"));
  std::this_thread::sleep_for(std::chrono::seconds{secs});
  os::kill_group(g.path);
  for (auto& s : shells)
    sandbox::wait_child(s);
  os::wait_empty(g.path, 10000);
  auto ran = seconds_since(t0);
  t.drain(cookie, 0);
  auto c = *t.probe->counters(cookie);
  auto losses = *t.probe->losses();
  bpf_time bpf;
  bpf.add(t.probe->stats());
  std::printf("| %d shell loop(s) of /bin/true, %d s | %.2f s | %llu | %llu "
              "| %.0f | %.0f | %s | %s |\n",
              loops, secs, ran, static_cast<unsigned long long>(c.sequences),
              static_cast<unsigned long long>(t.events.load()),
              double(t.events.load()) / ran, double(c.sequences) / 3 / ran,
              bpf.per_call().c_str(), loss_text(losses).c_str());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void overhead(uint32_t ring_bytes, int n, int rounds) {
  auto script = "i=0; while [ $i -lt " + std::to_string(n) +
                " ]; do /bin/true; i=$((i+1)); done";
  std::vector<double> none, loaded, tracked;
  bpf_time loaded_bpf, tracked_bpf;
  uint64_t events = 0;
  bpf::loss_counters losses;
  {
    group warm; // page cache, dentries, the shell's first start
    warm.run(script);
  }
  // Each round runs the three modes in a rotated order, so none of them
  // always comes first on a busy machine.
  for (int r = 0; r < rounds; ++r) {
    for (int step = 0; step < 3; ++step) {
      switch ((r + step) % 3) {
      case 0: {
        group g;
        none.push_back(g.run(script));
        break;
      }
      case 1: {
        tracker t{ring_bytes};
        group g; // the probe is attached, this cgroup not tracked
        loaded.push_back(g.run(script));
        loaded_bpf.add(t.probe->stats());
        break;
      }
      default: {
        tracker t{ring_bytes};
        group g;
        uint64_t cookie = 10 + r;
        t.probe->track(g.id, cookie);
        auto t0 = clock_type::now();
        g.run(script);
        t.drain(cookie, 0);
        tracked.push_back(seconds_since(t0));
        tracked_bpf.add(t.probe->stats());
        events += t.events.load();
        auto l = *t.probe->losses();
        for (size_t i = 0; i < l.by_cause.size(); ++i)
          losses.by_cause[i] += l.by_cause[i];
      }
      }
    }
  }
  auto row = [&](const char* mode, const std::vector<double>& v,
                 const bpf_time* bpf, const std::string& note) {
    auto lo = *std::min_element(v.begin(), v.end());
    auto lo_none = *std::min_element(none.begin(), none.end());
    std::string calls = "-";
    std::string per_process = "-";
    if (bpf != nullptr) {
      calls = bpf->per_call();
      per_process =
          std::to_string(bpf->ns / uint64_t(rounds) / uint64_t(n)) + " ns";
    }
    std::printf("| %s | %.3f s | %.0f us | %.3f | %.3f s | %.3f | %s | %s | "
                "%s |\n",
                mode, lo, lo / n * 1e6, lo / lo_none, median(v),
                median(v) / median(none), calls.c_str(), per_process.c_str(),
                note.c_str());
  };
  row("no probe", none, nullptr, "");
  row("probe loaded, cgroup untracked", loaded, &loaded_bpf, "");
  row("tracked (until every event is read)", tracked, &tracked_bpf,
      std::to_string(events / uint64_t(rounds)) + " events/run, loss " +
          loss_text(losses));
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"Process tracker under load"};
  uint32_t ring_kib = 256;
  int burst_n = 4000;
  int secs = 10;
  int loops = 2;
  int overhead_n = 3000;
  int rounds = 7;
  app.add_option("--ring-kib", ring_kib, "ring buffer size")
      ->capture_default_str();
  app.add_option("--burst", burst_n, "background processes")
      ->capture_default_str();
  app.add_option("--seconds", secs, "sustained run")->capture_default_str();
  app.add_option("--loops", loops, "sustained shell loops")
      ->capture_default_str();
  app.add_option("--overhead", overhead_n, "processes per overhead run")
      ->capture_default_str();
  app.add_option("--rounds", rounds, "overhead rounds (best and median)")
      ->capture_default_str();
  uint32_t wakeup_kib = 0;
  app.add_option("--wakeup-kib", wakeup_kib,
                 "wake the reader only at this much data (0: kernel default)")
      ->capture_default_str();
  app.add_option("--batch-ms", batch_ms,
                 "gather events into batches this long (0: one per wakeup)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  uint32_t ring = ring_kib * 1024;
  wakeup_bytes = wakeup_kib * 1024;
  try {
    // The kernel counts the programs' run time while this fd is open.
    auto stats = bpf::enable_run_time_stats();
    if (!stats)
      throw std::runtime_error(message_of(stats.error()));
    std::printf("Ring %u KiB, reader woken %s, batches of %d ms\n\n", ring_kib,
                wakeup_kib == 0
                    ? "by the kernel's default"
                    : ("at " + std::to_string(wakeup_kib) + " KiB").c_str(),
                batch_ms);
    std::printf("#### Burst (ring %u KiB)\n\n", ring_kib);
    std::printf("| load | script ran | to last event | records | received "
                "| events/s | BPF per call | loss |\n"
                "|---|---|---|---|---|---|---|---|\n");
    burst(ring, burst_n);
    std::printf("\n#### Sustained fork/exec/exit (ring %u KiB)\n\n", ring_kib);
    std::printf("| load | ran | records | received | events/s | processes/s "
                "| BPF per call | loss |\n|---|---|---|---|---|---|---|---|\n");
    sustained(ring, secs, loops);
    std::printf("\n#### Overhead: shell loop of %d /bin/true, %d rounds\n\n",
                overhead_n, rounds);
    std::printf("| mode | best | per process | best ratio | median | median "
                "ratio | BPF per call | BPF per process | events |\n"
                "|---|---|---|---|---|---|---|---|---|\n");
    overhead(ring, overhead_n, rounds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allox-tracker-storm: %s\n", e.what());
    return 1;
  }
  return 0;
}
