// SPDX-License-Identifier: Apache-2.0
// The writes facet of the SESSION actor (actors/session/writes.hpp).
//
//   TRACKER --write_record_batch--> on_write_batch: run of each cookie,
//            only inodes of this session's current/ subvolume
//                                     -> write_sets (live, or last sealed)
//   checkpoint.create: begin_write_cut (TRACKER: new generation) ->
//            snapshot -> seal_writes(id) -> its write_set_row goes to
//            METADATA with the checkpoint's row
//   checkpoint.delete: write_sets.drop -> write_set_rows (the children's)
//   file.write, upload, tar, share: note_daemon_write (the RPC's action)
//   start: load_write_sets (METADATA) -> writes_ready -> waiting diffs
//   session.rollback: restart_writes (a new current/ subvolume)
//   checkpoint.diff {writers}: writers_between (on the actor) ->
//            name_writers per change (on the worker, with the trees)
#include "actors/session/handlers.hpp"
#include "bpf/process.h"
#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_diff.hpp"
#include "guest/os/fs.hpp"

#include <caf/send.hpp>

#include <time.h>

#include <map>
#include <set>

namespace allox::session_facets {

namespace {
/// When this daemon started (wall clock, as session rows' created_ns).
const int64_t process_started_ns = os::now_ns();
} // namespace

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

/// Write records are taken: tracking by eBPF with write provenance on.
bool recording(self_ptr self) {
  const auto& cfg = self->state.runs.config;
  return cfg && cfg->tracker && cfg->write_provenance;
}

/// The command of run `run_id` and the last program of each of its
/// processes, from the session's row of the run (nothing when it has none).
void copy_run_names(const session_state& st, const std::string& run_id,
                    std::map<std::string, std::vector<std::string>>& commands,
                    std::map<std::string, std::string>& exes) {
  auto it = run_id.empty() ? st.runs.runs.end() : st.runs.runs.find(run_id);
  if (it == st.runs.runs.end())
    return;
  const auto& row = it->second.row;
  if (row.argv)
    commands[run_id] = *row.argv;
  for (const auto& p : row.processes.entries())
    if (!p.filenames.empty())
      exes[p.process_id] = p.filenames.back();
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
    for (const auto& m : w.mounts) {
      if (c.path == m)
        return "/"; // the workspace itself (a subtree change)
      if (c.path.size() > m.size() && c.path.compare(0, m.size(), m) == 0 &&
          c.path[m.size()] == '/')
        return joined("", c.path.substr(m.size() + 1));
    }
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
    if (x.process_id == f.process_id && x.run_id == f.run_id &&
        x.action == f.action && x.origin == f.origin) {
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
  c.action = f.action;
  c.origin = f.origin;
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
    file_writer w;
    w.run_id = run->second;
    w.process_id = r.process_id;
    w.pid = r.pid;
    w.ops = 1u << r.op;
    w.first_ns = w.last_ns = r.time_ns;
    if (r.by_name)
      st.writes.add(r.time_ns, named_change{r.subvol, r.ino, r.path, r.absolute,
                                            w, false});
    else if (r.subvol != 0)
      st.writes.add(r.time_ns, r.ino, w);
  }
  for (const auto& [cookie, n] : b.lost)
    if (st.runs.by_cookie.count(cookie) > 0) {
      st.write_records_lost += n;
      st.writes.lose(n, true);
    }
}

uint64_t begin_write_cut(self_ptr self) {
  if (recording(self))
    caf::anon_send(self->state.runs.config->tracker, atom::seal_v);
  return boottime_ns();
}

namespace {

/// Copies the command of each run and the program of each process that
/// `i` names, while the session still has their rows.
void name_runs(self_ptr self, write_interval& i) {
  auto& st = self->state;
  auto note = [&](const file_writer& w) {
    if (w.run_id.empty() || i.commands.count(w.run_id) > 0)
      return;
    copy_run_names(st, w.run_id, i.commands, i.exes);
  };
  for (const auto& [ino, writers] : i.by_inode)
    for (const auto& w : writers)
      note(w);
  for (const auto& c : i.by_name)
    note(c.writer);
}

write_set_row row_of(self_ptr self, const std::string& id,
                     const write_interval& i) {
  auto& st = self->state;
  return {st.agent_id(), st.session_id(), id, encode(i)};
}

} // namespace

caf::optional<write_set_row> seal_writes(self_ptr self, const std::string& id,
                                         uint64_t begin_ns) {
  auto& st = self->state;
  st.writes.seal(id, begin_ns, boottime_ns());
  auto* sealed = st.writes.sealed(id);
  if (!recording(self) || sealed == nullptr)
    return caf::none;
  name_runs(self, *sealed);
  return row_of(self, id, *sealed);
}

std::vector<write_set_row> write_set_rows(self_ptr self,
                                          const std::vector<std::string>& ids) {
  std::vector<write_set_row> out;
  for (const auto& id : ids)
    if (const auto* i = self->state.writes.sealed(id))
      out.push_back(row_of(self, id, *i));
  return out;
}

void load_write_sets(self_ptr self) {
  auto& st = self->state;
  // A session older than this actor (a restart of the daemon or of the
  // actor) lost its live interval's records: what it changed before reads
  // `not_recorded`, never `untracked`.
  if (st.init.restarts > 0 || st.init.row.created_ns < process_started_ns)
    st.writes.mark_partial();
  if (!st.init.metadata) {
    st.writes_loaded = true;
    return;
  }
  auto done = [self] {
    auto& state = self->state;
    state.writes_loaded = true;
    auto waiting = std::move(state.writes_waiting);
    state.writes_waiting.clear();
    for (auto& f : waiting)
      f();
  };
  self->request(st.init.metadata, caf::infinite, atom::writes_v,
                session_ref{st.agent_id(), st.session_id()})
      .then(
          [self, done](write_set_page& page) {
            auto& state = self->state;
            for (auto& r : page.rows) {
              if (state.dag.find(r.checkpoint_id) == nullptr)
                continue; // deleted meanwhile: its row goes with it
              auto i = decode_write_interval(r.body);
              if (!i) {
                // Unreadable: the interval reads `not_recorded`.
                log::warn("session", "write set of " + r.checkpoint_id + ": " +
                                         message_of(i.error()));
                continue;
              }
              state.writes.restore(r.checkpoint_id, std::move(*i));
            }
            done();
          },
          [self, done](caf::error& err) {
            log::warn("session", "loading write sets of " + self->state.key() +
                                     ": " + message_of(err));
            done();
          });
}

bool writes_ready(self_ptr self, std::function<void()> later) {
  auto& st = self->state;
  if (st.writes_loaded)
    return true;
  st.writes_waiting.push_back(std::move(later));
  return false;
}

void note_daemon_write(self_ptr self, const std::string& action,
                       const std::string& origin, const std::string& path,
                       uint32_t op, bool subtree) {
  // As for runs' records: kept only while write provenance is on, so that
  // a change without writers reads the same in memory and after a restart.
  if (!recording(self))
    return;
  auto now = boottime_ns();
  file_writer w;
  w.action = action;
  w.origin = origin.empty() ? "rpc" : origin;
  w.ops = 1u << op;
  w.first_ns = w.last_ns = now;
  named_change c;
  c.path = "/workspace";
  if (!path.empty() && path != "/" && path != ".")
    c.path += (path.front() == '/' ? "" : "/") + path;
  c.absolute = true;
  c.subtree = subtree;
  c.writer = std::move(w);
  self->state.writes.add(now, c);
}

write_interval restart_writes(self_ptr self) {
  auto replaced = self->state.writes.live();
  self->state.writes.restart();
  self->state.write_subvol = 0;
  return replaced;
}

caf::optional<write_set_row> adopt_writes(self_ptr self, const std::string& id,
                                          write_interval replaced) {
  if (!recording(self))
    return caf::none;
  name_runs(self, replaced);
  auto row = row_of(self, id, replaced);
  self->state.writes.restore(id, std::move(replaced));
  return row;
}

namespace {
/// The commands and programs of the runs `w` names, where runs saw the
/// workspace, and whether records are taken.
void name_processes(self_ptr self, diff_writers& into);
} // namespace

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
  name_processes(self, *out);
  return out;
}

std::shared_ptr<const diff_writers> writers_of(self_ptr self,
                                               const std::string& id) {
  auto out = std::make_shared<diff_writers>();
  if (const auto* sealed = self->state.writes.sealed(id))
    out->intervals.push_back(*sealed);
  else
    out->missing = true;
  name_processes(self, *out);
  return out;
}

namespace {

void name_processes(self_ptr self, diff_writers& into) {
  auto& st = self->state;
  auto* out = &into;
  // Names kept with sealed intervals first (their runs may be gone), then
  // the session's own rows for the rest.
  for (const auto& i : out->intervals) {
    if (i.partial)
      out->missing = true;
    out->commands.insert(i.commands.begin(), i.commands.end());
    out->exes.insert(i.exes.begin(), i.exes.end());
  }
  std::set<std::string> runs;
  for (const auto& i : out->intervals) {
    for (const auto& [ino, writers] : i.by_inode)
      for (const auto& w : writers)
        runs.insert(w.run_id);
    for (const auto& c : i.by_name)
      runs.insert(c.writer.run_id);
  }
  for (const auto& id : runs)
    if (out->commands.count(id) == 0)
      copy_run_names(st, id, out->commands, out->exes);
  out->recording = recording(self);
  out->mounts = {"/workspace",
                 st.init.paths.current(st.agent_id(), st.session_id())};
  out->mounts.insert(out->mounts.end(), st.run_homes.begin(),
                     st.run_homes.end());
}

} // namespace

void name_writers(const diff_writers& w, const std::string& from_dir,
                  const std::string& to_dir,
                  const std::vector<os::tree_change>& all,
                  std::vector<path_change>& page) {
  // Changes by name, resolved once per diff.
  std::map<uint64_t, std::string> dirs;
  std::map<std::string, std::vector<const file_writer*>> by_path;
  // Subtrees the daemon wrote (an unpacked tar): prefix -> writer.
  std::vector<std::pair<std::string, const file_writer*>> trees;
  uint64_t lost = 0;
  for (const auto& i : w.intervals) {
    lost += i.lost;
    for (const auto& c : i.by_name) {
      auto p = workspace_path(w, c, from_dir, to_dir, dirs);
      if (p.empty())
        continue;
      if (c.subtree)
        trees.emplace_back(p == "/" ? "" : p + "/", &c.writer);
      if (p != "/")
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
    for (const auto& [prefix, f] : trees)
      if (e.path.compare(0, prefix.size(), prefix) == 0)
        add_writer(w, *f, out.writers);
    if (out.writers.empty())
      out.unattributed = !w.recording || w.missing ? "not_recorded"
                         : lost > 0                ? "loss"
                                                   : "untracked";
  }
}

} // namespace allox::session_facets
