// SPDX-License-Identifier: Apache-2.0
// The writes facet of the SESSION actor (actors/session/writes.hpp).
//
//   TRACKER --write_record_batch--> on_write_batch: run of each cookie,
//            only inodes of this session's current/ subvolume
//                                     -> write_sets (live, or last sealed)
//   checkpoint.create: begin_write_cut (TRACKER: new generation) ->
//            snapshot -> seal_writes(id)
//   session.rollback: restart_writes (a new current/ subvolume)
//   checkpoint.diff {writers}: writers_between (on the actor) ->
//            name_writers per change (on the worker, with the trees)
#include "actors/session/handlers.hpp"
#include "bpf/process.h"
#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_diff.hpp"

#include <caf/send.hpp>

#include <time.h>

#include <map>
#include <set>

namespace allox::session_facets {

/// What a diff needs to name writers, copied off the actor.
struct diff_writers {
  /// The intervals between the diff's two trees.
  std::vector<write_interval> intervals;
  /// Some interval between them was not recorded (before write provenance
  /// or a restart of the session).
  bool missing = false;
  /// Process id -> the last program it ran.
  std::map<std::string, std::string> exes;
  /// Run id -> its command.
  std::map<std::string, std::vector<std::string>> commands;
  /// Write records were being taken (tracking with write provenance).
  bool recording = false;
  /// Where runs saw the workspace: /workspace, their homes, and current/
  /// itself (a run outside a sandbox).
  std::vector<std::string> mounts;
};

namespace {

uint64_t boottime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

/// The subvolume id of current/, looked up once per tree (an ioctl that
/// reads no disk).
uint64_t current_subvol(self_ptr self) {
  auto& st = self->state;
  if (st.write_subvol == 0) {
    auto id =
        os::subvolume_id(st.init.paths.current(st.agent_id(), st.session_id()));
    if (id)
      st.write_subvol = *id;
  }
  return st.write_subvol;
}

/// `dir`/`rel` without "." components; empty when it climbs out.
std::string joined(const std::string& dir, const std::string& rel) {
  std::vector<std::string> parts;
  auto push = [&parts](const std::string& text) {
    size_t pos = 0;
    while (pos <= text.size()) {
      auto end = text.find('/', pos);
      if (end == std::string::npos)
        end = text.size();
      auto part = text.substr(pos, end - pos);
      if (part == "..") {
        if (parts.empty())
          return false;
        parts.pop_back();
      } else if (!part.empty() && part != ".") {
        parts.push_back(std::move(part));
      }
      pos = end + 1;
    }
    return true;
  };
  if (!push(dir) || !push(rel))
    return {};
  std::string out;
  for (const auto& p : parts)
    out += (out.empty() ? "" : "/") + p;
  return out;
}

/// A change by name as a workspace path; empty when it is elsewhere.
std::string workspace_path(const diff_writers& w, const named_change& c,
                           const std::string& from_dir,
                           const std::string& to_dir,
                           std::map<uint64_t, std::string>& dirs) {
  if (c.absolute) {
    for (const auto& m : w.mounts)
      if (c.path.size() > m.size() && c.path.compare(0, m.size(), m) == 0 &&
          c.path[m.size()] == '/')
        return joined("", c.path.substr(m.size() + 1));
    return {};
  }
  if (c.subvol == 0)
    return {};
  auto it = dirs.find(c.dir_ino);
  if (it == dirs.end()) {
    // The directory as the later tree has it, else as the earlier one.
    auto p = os::directory_path(to_dir, c.dir_ino);
    if (!p)
      p = os::directory_path(from_dir, c.dir_ino);
    it = dirs.emplace(c.dir_ino, p ? *p : std::string{"\n"}).first;
  }
  if (it->second == "\n")
    return {};
  return joined(it->second, c.path);
}

void add_writer(const diff_writers& w, const file_writer& f,
                std::vector<change_writer>& out) {
  for (auto& x : out)
    if (x.process_id == f.process_id && x.run_id == f.run_id) {
      for (auto& op : write_op_names(f.ops))
        if (std::find(x.ops.begin(), x.ops.end(), op) == x.ops.end())
          x.ops.push_back(op);
      return;
    }
  change_writer c;
  c.run_id = f.run_id;
  c.process_id = f.process_id;
  c.pid = f.pid;
  c.ops = write_op_names(f.ops);
  if (auto it = w.exes.find(f.process_id); it != w.exes.end())
    c.exe = it->second;
  if (auto it = w.commands.find(f.run_id); it != w.commands.end())
    c.run_argv = it->second;
  out.push_back(std::move(c));
}

} // namespace

void on_write_batch(self_ptr self, const write_record_batch& b) {
  auto& st = self->state;
  for (const auto& r : b.records) {
    auto run = st.runs.by_cookie.find(r.cookie);
    if (run == st.runs.by_cookie.end())
      continue;
    ++st.write_records;
    // Inodes elsewhere (another subvolume of the store) are not this
    // workspace's: their numbers would collide with ours.
    if (r.subvol != 0 && r.subvol != current_subvol(self))
      continue;
    file_writer w{run->second, r.process_id, r.pid,
                  1u << r.op,  r.time_ns,    r.time_ns};
    if (r.by_name)
      st.writes.add(r.time_ns,
                    named_change{r.subvol, r.ino, r.path, r.absolute, w});
    else if (r.subvol != 0)
      st.writes.add(r.time_ns, r.ino, w);
  }
  for (const auto& [cookie, n] : b.lost)
    if (st.runs.by_cookie.count(cookie) > 0)
      st.writes.lose(n, true);
}

uint64_t begin_write_cut(self_ptr self) {
  const auto& cfg = self->state.runs.config;
  if (cfg && cfg->tracker && cfg->write_provenance)
    caf::anon_send(cfg->tracker, atom::seal_v);
  return boottime_ns();
}

void seal_writes(self_ptr self, const std::string& id, uint64_t begin_ns) {
  self->state.writes.seal(id, begin_ns, boottime_ns());
}

void restart_writes(self_ptr self) {
  self->state.writes.restart();
  self->state.write_subvol = 0;
}

std::shared_ptr<const diff_writers>
writers_between(self_ptr self, const std::string& from, const std::string& to,
                const caf::optional<std::string>& ancestor) {
  auto& st = self->state;
  auto out = std::make_shared<diff_writers>();
  // Every interval on the way from the common ancestor to either tree.
  auto walk = [&](caf::optional<std::string> id) {
    for (size_t steps = 0; id && id != ancestor && steps < 100000; ++steps) {
      if (const auto* sealed = st.writes.sealed(*id))
        out->intervals.push_back(*sealed);
      else
        out->missing = true;
      const auto* row = st.dag.find(*id);
      if (row == nullptr)
        break;
      id = row->parent_id;
    }
  };
  walk(from);
  if (to.empty()) {
    out->intervals.push_back(st.writes.live());
    walk(st.dag.head());
  } else {
    walk(to);
  }
  std::set<std::string> runs;
  for (const auto& i : out->intervals) {
    for (const auto& [ino, writers] : i.by_inode)
      for (const auto& w : writers)
        runs.insert(w.run_id);
    for (const auto& c : i.by_name)
      runs.insert(c.writer.run_id);
  }
  for (const auto& id : runs) {
    auto it = st.runs.runs.find(id);
    if (it == st.runs.runs.end())
      continue;
    const auto& row = it->second.row;
    if (row.argv)
      out->commands[id] = *row.argv;
    for (const auto& [pid, p] : row.processes) {
      const auto* f = p.as_object().if_contains("filenames");
      if (f != nullptr && f->is_array() && !f->as_array().empty() &&
          f->as_array().back().is_string())
        out->exes[std::string{pid}] =
            std::string{f->as_array().back().as_string()};
    }
  }
  const auto& cfg = st.runs.config;
  out->recording = cfg && cfg->tracker && cfg->write_provenance;
  out->mounts = {"/workspace",
                 st.init.paths.current(st.agent_id(), st.session_id())};
  out->mounts.insert(out->mounts.end(), st.run_homes.begin(),
                     st.run_homes.end());
  return out;
}

void name_writers(const diff_writers& w, const std::string& from_dir,
                  const std::string& to_dir,
                  const std::vector<os::tree_change>& all,
                  std::vector<path_change>& page) {
  // Changes by name, resolved once per diff.
  std::map<uint64_t, std::string> dirs;
  std::map<std::string, std::vector<const file_writer*>> by_path;
  uint64_t lost = 0;
  for (const auto& i : w.intervals) {
    lost += i.lost;
    for (const auto& c : i.by_name) {
      auto p = workspace_path(w, c, from_dir, to_dir, dirs);
      if (!p.empty())
        by_path[p].push_back(&c.writer);
    }
  }
  for (size_t k = 0; k < page.size() && k < all.size(); ++k) {
    auto& out = page[k];
    const auto& e = all[k];
    for (const auto& i : w.intervals)
      for (auto ino : {e.ino, e.from_ino}) {
        if (ino == 0)
          continue;
        if (auto it = i.by_inode.find(ino); it != i.by_inode.end())
          for (const auto& f : it->second)
            add_writer(w, f, out.writers);
      }
    if (auto it = by_path.find(e.path); it != by_path.end())
      for (const auto* f : it->second)
        add_writer(w, *f, out.writers);
    if (out.writers.empty())
      out.unattributed = !w.recording || w.missing ? "not_recorded"
                         : lost > 0                ? "loss"
                                                   : "untracked";
  }
}

} // namespace allox::session_facets
