// SPDX-License-Identifier: Apache-2.0
// The files facet of the SESSION actor: file.stat, list, read, write,
// mkdir, remove and move on the session's workspace (current/), or on the
// agent's shared area under the `@shared/` prefix. Paths are checked here
// and resolved beneath their root by guest/os/workspace_files.hpp. Reads
// run on the session's read lane; changes on its mutation lane, after any
// checkpoint or rollback step already queued there, and are refused while
// one runs. They are allowed while runs live (the processes and the caller
// then share the files, as two editors would).
#include "actors/session/handlers.hpp"
#include "bpf/process.h"
#include "guest/os/workspace_edit.hpp"
#include "guest/os/workspace_files.hpp"
#include "guest/store/upload_marks.hpp"

#include <string>
#include <utility>

namespace allox::session_facets {

namespace {

/// Prefix of paths in the agent's shared area (/agent/shared in runs).
constexpr std::string_view shared_prefix = "@shared";

/// A caller's path: the directory it is beneath and the checked rest.
struct target {
  std::string root;
  std::string rel;
  /// As the caller should see it again (prefix kept).
  std::string shown;
};

expected<target> resolve(self_ptr self, const std::string& path) {
  auto& st = self->state;
  std::string_view p{path};
  std::string root = st.init.paths.current(st.agent_id(), st.session_id());
  std::string prefix;
  if (p == shared_prefix ||
      (p.substr(0, shared_prefix.size()) == shared_prefix &&
       p.size() > shared_prefix.size() && p[shared_prefix.size()] == '/')) {
    root = st.init.paths.agent_shared(st.agent_id());
    p.remove_prefix(std::min(p.size(), shared_prefix.size() + 1));
    prefix = std::string{shared_prefix} + "/";
  }
  auto rel = os::clean_path(p);
  if (!rel)
    return rel.error();
  auto shown = prefix.empty() ? *rel
                              : (rel->empty() ? std::string{shared_prefix}
                                              : prefix + *rel);
  return target{std::move(root), std::move(*rel), std::move(shown)};
}

/// Runs a read on the read lane and answers with its result.
template <class T, class Job>
caf::result<T> read(self_ptr self, Job job) {
  auto rp = self->make_response_promise<T>();
  read_step<T>(
      self, std::move(job), [rp](T& v) mutable { rp.deliver(std::move(v)); },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

/// What an audit record of a change says of its result: a write's size,
/// an edit's count.
void audit_result(json::object& fields, const write_result& r) {
  fields["bytes"] = r.size;
}

void audit_result(json::object& fields, const replace_result& r) {
  fields["replacements"] = r.replacements;
  fields["bytes"] = r.size;
}

template <class T>
void audit_result(json::object&, const T&) {
  // nop: only writes report a size
}

/// A path the daemon changes itself (write provenance): noted when the
/// change succeeds, if it is in the workspace (not @shared).
struct noted {
  target at;
  uint32_t op = ALLOX_WRITE_DATA;
  bool subtree = false;
};

/// Runs a change on the mutation lane, audits it as `op` with `fields`
/// (not synced: the file itself was fsynced), notes its paths as written
/// by the daemon for the request's origin, and answers.
template <class T, class Job>
caf::result<T> change(self_ptr self, const char* op, json::object fields,
                      Job job, std::vector<noted> paths = {}) {
  if (auto err = require_alive(self))
    return err;
  if (mutating(self))
    return conflict("session is being checkpointed or restored: " +
                    self->state.key());
  auto rp = self->make_response_promise<T>();
  mutation_step<T>(
      self, std::move(job),
      [self, rp, op, fields, paths](T& v) mutable {
        auto& st = self->state;
        const auto* origin = fields.if_contains("origin");
        for (const auto& n : paths)
          if (n.at.root ==
              st.init.paths.current(st.agent_id(), st.session_id()))
            note_daemon_write(self, op,
                              origin != nullptr && origin->is_string()
                                  ? std::string{origin->as_string()}
                                  : std::string{},
                              n.at.rel, n.op, n.subtree);
        audit_result(fields, v);
        metadata_write w;
        w.durable = false;
        w.audit.push_back(audit(self, op, std::move(fields)));
        caf::anon_send(self->state.init.metadata, atom::write_v, std::move(w));
        rp.deliver(std::move(v));
      },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

/// A job that opens the target's root, runs `op(root, rel)` (returning an
/// expected<T>) and shows the caller's path in the result.
template <class T, class Op>
auto at_root(target t, Op op) {
  return [t = std::move(t), op]() mutable -> expected<T> {
    auto root = os::workspace_root::open(t.root);
    if (!root)
      return root.error();
    expected<T> r = op(*root, t.rel);
    if (!r)
      return r.error();
    r->path = t.shown;
    return r;
  };
}

} // namespace

caf::result<file_entry> handle(self_ptr self, const cmd::file_stat& c) {
  if (auto err = require_alive(self))
    return err;
  auto t = resolve(self, c.path);
  if (!t)
    return t.error();
  return read<file_entry>(
      self, at_root<file_entry>(std::move(*t), [](auto& root, auto& rel) {
        return os::stat_file(root, rel);
      }));
}

caf::result<dir_page> handle(self_ptr self, const cmd::file_list& c) {
  if (auto err = require_alive(self))
    return err;
  auto t = resolve(self, c.path);
  if (!t)
    return t.error();
  return read<dir_page>(
      self, at_root<dir_page>(std::move(*t), [c](auto& root, auto& rel) {
        return os::list_files(root, rel, c.recursive,
                              static_cast<size_t>(c.limit), c.cursor);
      }));
}

caf::result<read_slice> handle(self_ptr self, const cmd::file_read& c) {
  if (auto err = require_alive(self))
    return err;
  auto t = resolve(self, c.path);
  if (!t)
    return t.error();
  return read<read_slice>(
      self, at_root<read_slice>(std::move(*t), [c](auto& root, auto& rel) {
        return os::read_file(root, rel, static_cast<uint64_t>(c.offset),
                             static_cast<size_t>(c.limit), c.base64);
      }));
}

caf::result<write_result> handle(self_ptr self, const cmd::file_write& c) {
  auto t = resolve(self, c.path);
  if (!t)
    return t.error();
  json::object fields{
      {"origin", c.origin}, {"path", t->shown}, {"append", c.append}};
  std::vector<noted> paths{{*t}};
  return change<write_result>(
      self, "file.write", std::move(fields),
      at_root<write_result>(std::move(*t),
                            [c](auto& root, auto& rel) {
                              return os::write_file(
                                  root, rel, c.data,
                                  static_cast<unsigned>(c.mode), c.append);
                            }),
      std::move(paths));
}

caf::result<mkdir_result> handle(self_ptr self, const cmd::file_mkdir& c) {
  auto t = resolve(self, c.path);
  if (!t)
    return t.error();
  json::object fields{{"origin", c.origin}, {"path", t->shown}};
  std::vector<noted> paths{{*t, ALLOX_WRITE_MKDIR}};
  return change<mkdir_result>(
      self, "file.mkdir", std::move(fields),
      at_root<mkdir_result>(
          std::move(*t),
          [c](auto& root, auto& rel) -> expected<mkdir_result> {
            if (auto err = os::make_dir(root, rel, c.parents))
              return err;
            return mkdir_result{rel};
          }),
      std::move(paths));
}

caf::result<remove_result> handle(self_ptr self, const cmd::file_remove& c) {
  auto t = resolve(self, c.path);
  if (!t)
    return t.error();
  json::object fields{
      {"origin", c.origin}, {"path", t->shown}, {"recursive", c.recursive}};
  std::vector<noted> paths{{*t, ALLOX_WRITE_UNLINK, c.recursive}};
  return change<remove_result>(
      self, "file.remove", std::move(fields),
      at_root<remove_result>(
          std::move(*t),
          [c](auto& root, auto& rel) -> expected<remove_result> {
            auto n = os::remove_path(root, rel, c.recursive);
            if (!n)
              return n.error();
            return remove_result{rel, static_cast<int64_t>(*n)};
          }),
      std::move(paths));
}

caf::result<move_result> handle(self_ptr self, const cmd::file_move& c) {
  auto from = resolve(self, c.from);
  if (!from)
    return from.error();
  auto to = resolve(self, c.to);
  if (!to)
    return to.error();
  if (from->root != to->root)
    return make_error(errc::invalid_argument,
                      "file.move stays within one area (the workspace or "
                      "@shared)");
  return change<move_result>(
      self, "file.move",
      {{"origin", c.origin}, {"from", from->shown}, {"to", to->shown}},
      [f = *from, t = *to, replace = c.replace]() -> expected<move_result> {
        auto root = os::workspace_root::open(f.root);
        if (!root)
          return root.error();
        if (auto err = os::move_path(*root, f.rel, t.rel, replace))
          return err;
        return move_result{f.shown, t.shown};
      },
      std::vector<noted>{{*from, ALLOX_WRITE_RENAME, true},
                         {*to, ALLOX_WRITE_RENAME, true}});
}

caf::result<search_result> handle(self_ptr self, const cmd::file_search& c) {
  if (auto err = require_alive(self))
    return err;
  auto t = resolve(self, c.path);
  if (!t)
    return t.error();
  return read<search_result>(
      self, at_root<search_result>(std::move(*t), [c](auto& root, auto& rel) {
        os::search_bounds bounds;
        bounds.matches = static_cast<size_t>(c.limit);
        return os::search_files(root, rel, c.pattern, c.glob, c.regex, bounds);
      }));
}

caf::result<replace_result> handle(self_ptr self, const cmd::file_replace& c) {
  auto t = resolve(self, c.path);
  if (!t)
    return t.error();
  json::object fields{{"origin", c.origin}, {"path", t->shown}};
  std::vector<noted> paths{{*t, ALLOX_WRITE_DATA}};
  return change<replace_result>(
      self, "file.replace", std::move(fields),
      at_root<replace_result>(std::move(*t),
                              [c](auto& root, auto& rel) {
                                return os::replace_in_file(
                                    root, rel, c.old_string, c.new_string,
                                    c.expected_count, cmd::max_replace_file);
                              }),
      std::move(paths));
}

caf::result<transfer_audited> handle(self_ptr self,
                                     const cmd::file_transfer_end& c) {
  if (auto err = require_alive(self))
    return err;
  auto t = resolve(self, c.path);
  if (!t)
    return t.error();
  // The upload renamed its file into a tree a rollback has replaced
  // since: the file went with that tree.
  if (c.upload && c.epoch != static_cast<int64_t>(self->state.rollbacks))
    return conflict("the session was rolled back during the upload, "
                    "which went with the replaced tree: " +
                    self->state.key());
  // The bytes are on disk (fsynced) or with the client already; like
  // file.write, the audit record itself is not synced.
  json::object fields{{"origin", c.origin},
                      {"path", t->shown},
                      {"bytes", c.bytes},
                      {"tar", c.tar}};
  if (c.tar)
    fields["entries"] = c.entries;
  if (!c.files.empty())
    fields["files"] = json::array(c.files.begin(), c.files.end());
  auto& st = self->state;
  if (c.upload &&
      t->root == st.init.paths.current(st.agent_id(), st.session_id())) {
    if (c.files.empty())
      note_daemon_write(self, "file.upload", c.origin, t->rel, ALLOX_WRITE_DATA,
                        c.tar);
    for (const auto& f : c.files)
      note_daemon_write(self, "file.upload", c.origin, f, ALLOX_WRITE_DATA);
  }
  metadata_write w;
  w.durable = false;
  w.audit.push_back(audit(self, c.upload ? "file.upload" : "file.download",
                          std::move(fields)));
  caf::anon_send(self->state.init.metadata, atom::write_v, std::move(w));
  return transfer_audited{};
}

caf::result<transfer_begun> handle(self_ptr self,
                                   const cmd::file_transfer_begin& c) {
  if (auto err = require_alive(self))
    return err;
  auto t = resolve(self, c.path);
  if (!t)
    return t.error();
  // An upload changes the workspace: never under a checkpoint or rollback
  // (a download reads, like file.read, and may).
  if (c.upload && mutating(self))
    return conflict("session is being checkpointed or restored: " +
                    self->state.key());
  auto& st = self->state;
  return transfer_begun{
      t->root,
      t->rel,
      t->shown,
      static_cast<int64_t>(st.rollbacks),
      t->root != st.init.paths.current(st.agent_id(), st.session_id()),
      store::uploads_dir(st.init.paths, st.agent_id(), st.session_id())};
}

} // namespace allox::session_facets
