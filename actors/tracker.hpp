// SPDX-License-Identifier: Apache-2.0
// The TRACKER: owner of the process-tracking probe (bpf/loader.hpp) and of
// the CAF-free reader thread that polls its ring buffer
// (tracking/reader.hpp). Sessions have it track each run's cgroup
// under a cookie before the run's first process exists; every batch the
// reader hands over is split by cookie and sent, one message per batch and
// session, to the sessions owning the runs. It checks the kernel's loss
// counters with every batch and fails the affected runs; a failed reader
// or probe fails every tracked run, and the TRACKER loads the probe again
// with back-off (docs/architecture.md, "TRACKER").
//
// Runs detached: loading the probe takes tens of milliseconds, and the
// drain at a run's end reads the kernel's counters.
#pragma once

#include "bpf/loader.hpp"
#include "guest/faults.hpp"
#include "messages/actors.hpp"
#include "tracking/reader.hpp"

#include <caf/typed_response_promise.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace allox {

/// What the TRACKER is started with.
struct tracker_init {
  /// Settings of every probe it loads (ring size ...).
  bpf::probe_options probe;
  /// Settings of every reader it starts.
  tracking::reader_options reader;
  /// How long a drain waits for a run's last records.
  std::chrono::milliseconds drain_deadline{2000};
  /// Back-off of the first reload after a failure; doubles up to
  /// max_backoff.
  std::chrono::milliseconds first_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
};

/// One run the kernel attributes processes to.
struct tracked_run {
  uint64_t cgroup_id = 0;
  session_tracking_actor session;
  /// Events received and handed to the session.
  uint64_t received = 0;
  /// The kernel's per-run loss counter when last checked.
  uint64_t lost = 0;
  /// The kernel's count of the run's lost write records when last checked.
  uint64_t writes_lost = 0;
  /// The session was told the trace is incomplete.
  bool failed = false;
  /// untrack requests waiting for the run's last records.
  std::vector<caf::typed_response_promise<trace_summary>> drains;
  std::chrono::steady_clock::time_point deadline;
  /// When the first untrack request came.
  std::chrono::steady_clock::time_point drain_started;
};

struct tracker_state {
  static inline const char* name = "tracker";

  tracker_init init;

  // -- the BPF side ----------------------------------------------------------

  /// The loaded probe; null while it is down (failed, reloading).
  std::unique_ptr<bpf::process_probe> probe;
  /// The reader of the probe's ring; declared after the probe, so that it
  /// stops before the probe goes.
  std::unique_ptr<tracking::ring_reader> reader;
  /// Counts probe loads: batches and failures of an earlier probe are
  /// recognised as such.
  uint64_t generation = 0;
  /// The probe is loaded and its reader runs.
  bool ready = false;
  /// Why the probe is down (or was last); empty when it never failed.
  std::string error;
  /// Reloads after a failure (successful or not).
  uint64_t restarts = 0;
  std::chrono::milliseconds backoff{0};
  /// The kernel's loss counters of the current probe, last seen.
  bpf::loss_counters losses;
  /// Fault points "tracking.probe.*" and "tracking.reader.*" for the next
  /// probe and reader (tests).
  fault_set faults;

  // -- runs ------------------------------------------------------------------

  /// cookie -> run.
  std::unordered_map<uint64_t, tracked_run> runs;
  /// Sessions monitored (their runs are untracked when they end).
  std::set<caf::actor_addr> sessions;
  /// A drain tick is pending.
  bool tick_armed = false;

  // -- counters (tracker.status, system.dump) --------------------------------

  uint64_t events_received = 0;
  /// Write-provenance records read (bpf/write_provenance.bpf.h).
  uint64_t write_records = 0;
  uint64_t batches = 0;
  /// Kernel losses by cause, over every probe loaded.
  std::array<uint64_t, ALLOX_LOSS_CAUSES> lost{};
  /// Records that never arrived before a drain's deadline.
  uint64_t lost_at_drain = 0;
  /// Records of runs whose probe failed before they were drained (unknown
  /// count: each such run counts once).
  uint64_t runs_lost_to_failure = 0;
  /// Records the reader refused (decode errors), last seen.
  uint64_t decode_errors = 0;
  uint64_t runs_tracked = 0;
  uint64_t runs_failed = 0;
  /// How long drains waited for a run's last records (us): the last one
  /// and the longest.
  int64_t drain_us_last = 0;
  int64_t drain_us_max = 0;
  std::chrono::steady_clock::time_point started;
};

tracker_actor::behavior_type
tracker(tracker_actor::stateful_pointer<tracker_state> self, tracker_init init);

} // namespace allox
