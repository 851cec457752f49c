// SPDX-License-Identifier: Apache-2.0
#include "bpf/loader.hpp"

#include "bpf/libbpf_errors.hpp"
#include "bpf/process.skel.h" // generated
#include "guest/log.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

namespace allox::bpf {

namespace {

/// Whether sched_process_exit's BTF prototype has the `group_dead`
/// argument: (void *ctx, struct task_struct *p, bool group_dead).
bool detect_group_dead(const struct btf* btf) {
  auto id = btf__find_by_name_kind(btf, "btf_trace_sched_process_exit",
                                   BTF_KIND_TYPEDEF);
  if (id < 0)
    return false;
  auto* t = btf__type_by_id(btf, static_cast<__u32>(id));
  for (int hops = 0; t != nullptr && hops < 4; ++hops) {
    if (btf_is_func_proto(t))
      return btf_vlen(t) >= 3;
    t = btf__type_by_id(btf, t->type);
  }
  return false;
}

bool power_of_two(uint32_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

run_counters counters_of(const allox_run& r) {
  return {r.next_seq,  r.produced,  r.lost,
          r.root_tgid, r.write_seq, r.writes_lost};
}

/// The tracepoints of the write-provenance programs, in write_programs'
/// order: each needs the kernel's BTF type btf_trace_<tracepoint>.
constexpr std::array<const char*, 3> write_tracepoints = {
    "sys_enter", "sys_exit", "btrfs_inode_new"};

/// A write-provenance program and its name ("tp_btf/<tracepoint>").
struct write_program {
  bpf_program* prog;
  bpf_link** link;
  std::string name;
};

std::vector<write_program> write_programs(allox_process* skel) {
  auto& p = skel->progs;
  auto& l = skel->links;
  std::array<std::pair<bpf_program*, bpf_link**>, write_tracepoints.size()>
      progs = {{{p.write_enter, &l.write_enter},
                {p.write_exit, &l.write_exit},
                {p.write_new_inode, &l.write_new_inode}}};
  std::vector<write_program> out;
  for (size_t i = 0; i < progs.size(); ++i)
    out.push_back({progs[i].first, progs[i].second,
                   std::string{"tp_btf/"} + write_tracepoints[i]});
  return out;
}

} // namespace

uint64_t process_probe::next_write_generation() {
  return __atomic_add_fetch(&skel_->data->write_generation, 1,
                            __ATOMIC_SEQ_CST);
}

uint64_t loss_counters::total() const {
  uint64_t sum = 0;
  for (auto n : by_cause)
    sum += n;
  return sum;
}

std::string_view loss_cause_name(size_t cause) {
  switch (cause) {
  case ALLOX_LOSS_RINGBUF_FORK:
    return "ringbuf_fork";
  case ALLOX_LOSS_RINGBUF_EXEC:
    return "ringbuf_exec";
  case ALLOX_LOSS_RINGBUF_EXIT:
    return "ringbuf_exit";
  case ALLOX_LOSS_TASKS_FULL:
    return "tasks_full";
  case ALLOX_LOSS_NO_RUN:
    return "no_run";
  case ALLOX_LOSS_RINGBUF_WRITE:
    return "ringbuf_write";
  default:
    return "unknown";
  }
}

expected<std::unique_ptr<process_probe>>
process_probe::open(probe_options opts) {
  try {
    opts.faults.trigger("tracking.probe.load");
  } catch (const std::exception& e) {
    return make_error(errc::internal,
                      std::string{"load the process probe: "} + e.what());
  }
  auto page = static_cast<uint32_t>(::sysconf(_SC_PAGESIZE));
  if (!power_of_two(opts.ring_bytes) || opts.ring_bytes < page)
    return make_error(errc::invalid_argument,
                      "ring buffer size must be a power of two of at least " +
                          std::to_string(page) + " bytes, not " +
                          std::to_string(opts.ring_bytes));
  if (opts.wakeup_bytes >= opts.ring_bytes)
    return make_error(errc::invalid_argument,
                      "wakeup_bytes must be below the ring buffer size");
  if (opts.max_tasks == 0 || opts.max_runs == 0)
    return make_error(errc::invalid_argument,
                      "max_tasks and max_runs must be positive");

  capture_libbpf capture;
  std::unique_ptr<process_probe> probe{new process_probe};
  probe->opts_ = std::move(opts);

  // The kernel's BTF: the tracepoints and the exit prototype.
  auto* vmlinux = btf__load_vmlinux_btf();
  if (vmlinux == nullptr)
    return capture.error(errc::unsupported,
                         "read the kernel BTF (/sys/kernel/btf/vmlinux)",
                         errno);
  for (auto name : tracepoint_types) {
    if (btf__find_by_name_kind(vmlinux, std::string{name}.c_str(),
                               BTF_KIND_TYPEDEF) < 0) {
      btf__free(vmlinux);
      return make_error(errc::unsupported,
                        "the kernel BTF has no tracepoint type " +
                            std::string{name});
    }
  }
  probe->group_dead_arg_ = detect_group_dead(vmlinux);
  // Write hooks whose tracepoint this kernel lacks are left out, not
  // fatal (btrfs_inode_new needs Btrfs built with its tracepoints).
  std::vector<std::string> missing;
  for (const char* tp : write_tracepoints)
    if (btf__find_by_name_kind(vmlinux,
                               (std::string{"btf_trace_"} + tp).c_str(),
                               BTF_KIND_TYPEDEF) < 0)
      missing.push_back(std::string{"tp_btf/"} + tp);
  btf__free(vmlinux);

  bool writes = probe->opts_.writes;
  auto err = probe->load(writes, missing);
  if (err && writes) {
    // Process tracking does not depend on write provenance.
    probe->writes_error_ = "write hooks not loaded: " + message_of(err);
    log::warn("bpf", probe->writes_error_);
    err = probe->load(false, missing);
  }
  if (err)
    return err;
  return probe;
}

caf::error process_probe::load(bool writes,
                               const std::vector<std::string>& missing) {
  capture_libbpf capture;
  if (skel_ != nullptr) {
    allox_process__destroy(skel_);
    skel_ = nullptr;
  }
  write_hooks_.clear();
  writes_on_ = false;
  auto* skel = allox_process__open();
  if (skel == nullptr)
    return capture.error(errc::internal, "open the BPF object", errno);
  skel_ = skel;

  if (skel->rodata->object_abi != ALLOX_PROCESS_ABI)
    return make_error(errc::internal,
                      "the BPF object speaks event ABI " +
                          std::to_string(skel->rodata->object_abi) +
                          ", this loader " + std::to_string(ALLOX_PROCESS_ABI));
  skel->rodata->exit_has_group_dead = group_dead_arg_;
  skel->rodata->debug = opts_.debug;
  skel->rodata->wakeup_bytes = opts_.wakeup_bytes;
  skel->rodata->batch_wakeup_bytes = opts_.ring_bytes / 4;

  struct sizing {
    bpf_map* map;
    uint32_t entries;
    const char* name;
  };
  const auto& o = opts_;
  for (auto s :
       {sizing{skel->maps.events, o.ring_bytes, "events"},
        sizing{skel->maps.tasks, o.max_tasks, "tasks"},
        sizing{skel->maps.runs, o.max_runs, "runs"},
        sizing{skel->maps.tracked_cgroups, o.max_runs, "tracked_cgroups"},
        sizing{skel->maps.write_seen, std::max<uint32_t>(o.max_write_keys, 1),
               "write_seen"}}) {
    if (int err = bpf_map__set_max_entries(s.map, s.entries); err != 0)
      return capture.error(errc::internal,
                           std::string{"size the BPF map "} + s.name, err);
  }
  auto hooks = write_programs(skel);
  for (const auto& w : hooks) {
    bool on = writes && std::find(missing.begin(), missing.end(), w.name) ==
                            missing.end();
    bpf_program__set_autoload(w.prog, on);
  }

  if (int err = allox_process__load(skel); err != 0)
    return capture.error(errc::internal,
                         "load the BPF programs (verifier or kernel refused)",
                         err);

  struct attach {
    bpf_program* prog;
    bpf_link** link;
    const char* name;
  };
  for (auto a : {attach{skel->progs.handle_fork, &skel->links.handle_fork,
                        "tp_btf/sched_process_fork"},
                 attach{skel->progs.handle_exec, &skel->links.handle_exec,
                        "tp_btf/sched_process_exec"},
                 attach{skel->progs.handle_exit, &skel->links.handle_exit,
                        "tp_btf/sched_process_exit"}}) {
    *a.link = bpf_program__attach(a.prog);
    if (*a.link == nullptr)
      return capture.error(errc::internal, std::string{"attach "} + a.name,
                           errno);
  }
  for (const auto& w : hooks) {
    write_hook h{w.name, false};
    if (bpf_program__autoload(w.prog)) {
      *w.link = bpf_program__attach(w.prog);
      if (*w.link == nullptr)
        return capture.error(errc::internal, "attach " + w.name, errno);
      h.attached = true;
      writes_on_ = true;
    }
    write_hooks_.push_back(std::move(h));
  }
  if (writes && !missing.empty() && writes_error_.empty()) {
    writes_error_ = "the kernel lacks the write hooks";
    for (const auto& m : missing)
      writes_error_ += " " + m;
  }
  return caf::none;
}

process_probe::~process_probe() {
  if (skel_ != nullptr)
    allox_process__destroy(skel_);
}

caf::error process_probe::track(uint64_t cgroup, uint64_t cookie) {
  if (cookie == 0)
    return make_error(errc::invalid_argument, "a run cookie must not be 0");
  std::lock_guard<std::mutex> guard{mtx_};
  if (auto it = cgroups_.find(cgroup); it != cgroups_.end())
    return make_error(errc::conflict, "cgroup " + std::to_string(cgroup) +
                                          " is tracked already (run " +
                                          std::to_string(it->second) + ")");
  bool new_run = runs_.count(cookie) == 0;
  if (new_run) {
    // The run's counters exist before its cgroup is tracked: the kernel
    // never sees a tracked cgroup without them.
    allox_run zero{};
    if (bpf_map__update_elem(skel_->maps.runs, &cookie, sizeof(cookie), &zero,
                             sizeof(zero), BPF_NOEXIST) != 0)
      return sys_error("add run " + std::to_string(cookie) +
                       " to the BPF map runs");
  }
  if (bpf_map__update_elem(skel_->maps.tracked_cgroups, &cgroup, sizeof(cgroup),
                           &cookie, sizeof(cookie), BPF_NOEXIST) != 0) {
    auto err = sys_error("add cgroup " + std::to_string(cgroup) +
                         " to the BPF map tracked_cgroups");
    if (new_run)
      (void)bpf_map__delete_elem(skel_->maps.runs, &cookie, sizeof(cookie), 0);
    return err;
  }
  cgroups_[cgroup] = cookie;
  ++runs_[cookie];
  return caf::none;
}

expected<run_counters> process_probe::untrack(uint64_t cgroup) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto it = cgroups_.find(cgroup);
  if (it == cgroups_.end())
    return make_error(errc::not_found,
                      "cgroup " + std::to_string(cgroup) + " is not tracked");
  auto cookie = it->second;
  // No new root from this cgroup from here on.
  (void)bpf_map__delete_elem(skel_->maps.tracked_cgroups, &cgroup,
                             sizeof(cgroup), 0);
  cgroups_.erase(it);
  run_counters final_counters;
  if (--runs_[cookie] > 0) {
    allox_run r{};
    if (bpf_map__lookup_elem(skel_->maps.runs, &cookie, sizeof(cookie), &r,
                             sizeof(r), 0) == 0)
      final_counters = counters_of(r);
    return final_counters;
  }
  runs_.erase(cookie);
  // The run's processes that are still alive (it should have none) stop
  // being tracked: collect them first, the walk restarts on deletion.
  std::vector<uint32_t> stale;
  each_task([&](uint32_t tgid, const allox_task& task) {
    if (task.cookie == cookie)
      stale.push_back(tgid);
  });
  for (auto tgid : stale)
    (void)bpf_map__delete_elem(skel_->maps.tasks, &tgid, sizeof(tgid), 0);
  allox_run r{};
  if (bpf_map__lookup_elem(skel_->maps.runs, &cookie, sizeof(cookie), &r,
                           sizeof(r), 0) == 0)
    final_counters = counters_of(r);
  (void)bpf_map__delete_elem(skel_->maps.runs, &cookie, sizeof(cookie), 0);
  return final_counters;
}

bool process_probe::knows(uint64_t cookie) const {
  std::lock_guard<std::mutex> guard{mtx_};
  return runs_.count(cookie) != 0;
}

expected<run_counters> process_probe::counters(uint64_t cookie) const {
  allox_run r{};
  if (bpf_map__lookup_elem(skel_->maps.runs, &cookie, sizeof(cookie), &r,
                           sizeof(r), 0) != 0) {
    if (errno == ENOENT)
      return make_error(errc::not_found,
                        "run " + std::to_string(cookie) + " is not tracked");
    return sys_error("read run " + std::to_string(cookie) +
                     " from the BPF map runs");
  }
  return counters_of(r);
}

expected<loss_counters> process_probe::losses() const {
  // The programs count with atomic adds into the mapped .bss.
  loss_counters out;
  for (size_t cause = 0; cause < ALLOX_LOSS_CAUSES; ++cause)
    out.by_cause[cause] =
        __atomic_load_n(&skel_->bss->loss_counts[cause], __ATOMIC_RELAXED);
  return out;
}

size_t process_probe::live_processes(uint64_t cookie) const {
  size_t n = 0;
  each_task([&](uint32_t, const allox_task& task) {
    if (task.cookie == cookie)
      ++n;
  });
  return n;
}

void process_probe::each_task(
    const std::function<void(uint32_t, const allox_task&)>& f) const {
  // Batched: a walk key by key costs two system calls per live process of
  // every tracked run, and every run's end walks (on the TRACKER, where
  // every other run's drain waits).
  int fd = bpf_map__fd(skel_->maps.tasks);
  std::vector<uint32_t> keys;
  std::vector<allox_task> values;
  uint32_t cursor = 0;
  bool batched = true;
  for (bool first = true;; first = false) {
    auto count = static_cast<uint32_t>(task_batch);
    auto at = keys.size();
    keys.resize(at + count);
    values.resize(at + count);
    int rc = bpf_map_lookup_batch(fd, first ? nullptr : &cursor, &cursor,
                                  keys.data() + at, values.data() + at, &count,
                                  nullptr);
    int err = rc < 0 ? errno : 0;
    keys.resize(at + count);
    values.resize(at + count);
    if (rc < 0 && err == ENOENT)
      break; // the end of the map
    if (rc < 0 || keys.size() > opts_.max_tasks) {
      batched = false;
      break;
    }
  }
  if (!batched) {
    // The kernel refused a batch (a bucket larger than a batch, say): walk
    // key by key instead.
    keys.clear();
    values.clear();
    uint32_t key = 0;
    uint32_t* prev = nullptr;
    allox_task task{};
    for (uint32_t steps = 0; steps <= opts_.max_tasks; ++steps) {
      if (bpf_map_get_next_key(fd, prev, &key) != 0)
        break;
      if (bpf_map_lookup_elem(fd, &key, &task) == 0) {
        keys.push_back(key);
        values.push_back(task);
      }
      prev = &key;
    }
  }
  for (size_t i = 0; i < keys.size(); ++i)
    f(keys[i], values[i]);
}

std::vector<program_stats> process_probe::stats() const {
  std::vector<program_stats> out;
  std::vector<bpf_program*> progs = {skel_->progs.handle_fork,
                                     skel_->progs.handle_exec,
                                     skel_->progs.handle_exit};
  for (const auto& w : write_programs(skel_))
    if (bpf_program__autoload(w.prog))
      progs.push_back(w.prog);
  for (auto* prog : progs) {
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    program_stats s;
    s.name = bpf_program__name(prog);
    if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0) {
      s.runs = info.run_cnt;
      s.run_ns = info.run_time_ns;
    }
    out.push_back(std::move(s));
  }
  return out;
}

expected<os::unique_fd> enable_run_time_stats() {
  int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (fd < 0)
    return sys_error("enable BPF run-time statistics");
  return os::unique_fd{fd};
}

int process_probe::ring_fd() const {
  return bpf_map__fd(skel_->maps.events);
}

void process_probe::set_reader_batching(bool on) {
  // The programs read it with a volatile load on every submit.
  __atomic_store_n(&skel_->bss->reader_batching, on ? 1U : 0U,
                   __ATOMIC_SEQ_CST);
}

expected<uint64_t> cgroup_id(const std::string& path) {
  // cgroupfs inode numbers are the kernfs node ids on 64-bit kernels; the
  // file handle carries the same id on every arch.
  alignas(file_handle) unsigned char
      buf[sizeof(file_handle) + sizeof(uint64_t)] = {};
  auto* fh = reinterpret_cast<file_handle*>(buf);
  fh->handle_bytes = sizeof(uint64_t);
  int mount_id = 0;
  if (::name_to_handle_at(AT_FDCWD, path.c_str(), fh, &mount_id, 0) == 0 &&
      fh->handle_bytes == sizeof(uint64_t)) {
    uint64_t id = 0;
    std::memcpy(&id, buf + sizeof(file_handle), sizeof(id));
    return id;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return sys_error("stat cgroup " + path);
  return static_cast<uint64_t>(st.st_ino);
}

} // namespace allox::bpf
