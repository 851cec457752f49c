// SPDX-License-Identifier: Apache-2.0
// The share facet of the SESSION actor: session-to-session sharing
// (share.*, reference 10.2). share.status, enable and disable are the
// session's own policy; share.list, read and write are sent by a session
// (the caller) and served by another (the target). Both must have opted
// in, the target's scope bounds what is reached, and only a target with
// permission `write` is written.
//
// How a request reaches its target. RPC (and the in-guest endpoint, which
// goes through RPC) sends share.list/read/write to the CALLER's SESSION,
// which owns the caller's policy:
//
//   caller SESSION: alive, own policy enabled (else refused, audited in the
//     target's trail)
//   -> AGENTS: session(target agent, target session) -> its AGENT -> the
//      target's handle (no such session: refused as not enabled)
//   -> target SESSION: share_access {caller, op, path, data}
//   -> target SESSION: alive, own policy enabled, write needs permission
//      write and no mutation, path rules -> its mutation lane (after any
//      checkpoint or rollback step queued before; reads see current/
//      before or after a rollback, never half-way): openat2 beneath
//      current/ -> audit in its trail -> reply -> caller -> RPC
//
// The caller waits for nothing but messages: its actor keeps serving, and
// the filesystem work is the target's, on the target's lane. No lock is
// shared between the two sessions, nor with any other; the caller's
// policy is read when the request passes the caller, the target's when it
// reaches the target.
#include "actors/session/handlers.hpp"
#include "bpf/process.h"
#include "guest/os/fs.hpp"
#include "guest/os/share_files.hpp"

#include <caf/sec.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace allox::session_facets {

namespace {

/// How long a caller waits for the target: its lane may first finish a
/// checkpoint or rollback queued before the request.
constexpr auto share_answer_timeout = std::chrono::seconds{60};

caf::error not_enabled() {
  return make_error(errc::forbidden, "both Sessions must enable share");
}

/// An access as the target's audit trail records it (`share.<op>`): the
/// caller, the path as sent, and the outcome (never any file content).
audit_event access_audit(const cmd::share_access& a, std::string_view op,
                         const caf::error& err, json::object extra = {}) {
  json::object fields{{"caller_agent_id", a.caller.agent_id},
                      {"caller_session_id", a.caller.session_id},
                      {"path", a.path},
                      {"result", err ? "denied_or_failed" : "success"}};
  if (err)
    fields["error"] = message_of(err);
  for (auto& kv : extra)
    fields[kv.key()] = std::move(kv.value());
  return {os::now_ns(), "share." + std::string{op}, a.session.agent_id,
          a.session.session_id, json::serialize(fields)};
}

audit_event access_audit(const cmd::share_access& a, const caf::error& err,
                         json::object extra = {}) {
  return access_audit(a, name_of(a.op), err, std::move(extra));
}

/// Queues an audit record (not synced: it records, it guards nothing).
void send_audit(const metadata_actor& metadata, audit_event e) {
  metadata_write w;
  w.durable = false;
  w.audit.push_back(std::move(e));
  caf::anon_send(metadata, atom::write_v, std::move(w));
}

share_view describe(self_ptr self, const share_policy& p) {
  return {self->state.agent_id(), self->state.session_id(), p};
}

/// Changes the policy: `check` on the lane (in order with every other
/// change), then one durable commit of the policy and its audit record
/// (`op`), then the policy is in force and the caller answered. `next`
/// turns the policy as queued changes leave it into the new one.
template <class Check, class Next>
caf::result<share_view> change_policy(self_ptr self, const char* op,
                                      std::string origin, Check check,
                                      Next next) {
  if (auto err = require_alive(self))
    return err;
  auto rp = self->make_response_promise<share_view>();
  mutation_step<step_done>(
      self, std::move(check),
      [self, rp, op, origin, next](step_done&) mutable {
        auto& st = self->state;
        auto p = next(st.share_next);
        st.share_next = p;
        metadata_write w;
        w.set_share_policies.push_back(
            {st.agent_id(), st.session_id(), serialize_share_policy(p)});
        w.audit.push_back(audit(self, op,
                                {{"enabled", p.enabled},
                                 {"scope", p.scope},
                                 {"permission", p.permission},
                                 {"origin", origin}}));
        commit(
            self, std::move(w),
            [self, rp, p]() mutable {
              self->state.share = p;
              rp.deliver(describe(self, p));
            },
            [self, rp](caf::error err) mutable {
              // Not written: what is in force stays, and so do later
              // changes' starting point.
              self->state.share_next = self->state.share;
              rp.deliver(std::move(err));
            });
      },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

/// The caller's side of list/read/write: its own policy, then the target's
/// SESSION through AGENTS, whose answer is the op's result `T`.
template <class T>
caf::result<T> ask_target(self_ptr self, cmd::share_access a) {
  if (auto err = require_alive(self))
    return err;
  auto& st = self->state;
  if (!st.share.enabled) {
    ++st.share_refused;
    send_audit(st.init.metadata, access_audit(a, not_enabled()));
    return not_enabled();
  }
  auto agents = caf::actor_cast<agents_actor>(st.init.agents);
  if (!agents)
    return make_error(errc::conflict, "the daemon is shutting down");
  auto rp = self->make_response_promise<T>();
  // No such session (or one gone before it saw the request) looks like
  // one that never opted in: a caller learns nothing about others.
  auto no_target = [self, rp, a]() mutable {
    ++self->state.share_refused;
    send_audit(self->state.init.metadata, access_audit(a, not_enabled()));
    rp.deliver(not_enabled());
  };
  self->request(agents, caf::infinite, atom::session_v, a.session.agent_id,
                a.session.session_id)
      .then(
          [self, rp, a, no_target](session_actor& target) mutable {
            // The target answers (and audits) everything it saw itself.
            // Bounded: a target whose actor dies while it holds the
            // request would otherwise leave the caller waiting for RPC's
            // own deadline.
            self->request(target, share_answer_timeout, a)
                .then(
                    [rp](share_answer& v) mutable {
                      if (auto* r = std::get_if<T>(&v))
                        rp.deliver(std::move(*r));
                      else
                        rp.deliver(make_error(
                            errc::internal, "the target answered another op"));
                    },
                    [rp, no_target](caf::error& err) mutable {
                      if (receiver_down(err))
                        return no_target();
                      if (err == caf::sec::request_timeout) {
                        rp.deliver(make_error(
                            errc::conflict,
                            "the target session did not answer in time"));
                        return;
                      }
                      rp.deliver(std::move(err));
                    });
          },
          [rp, no_target](caf::error& err) mutable {
            if (code_of(err) == errc::not_found || receiver_down(err))
              return no_target();
            rp.deliver(std::move(err));
          });
  return rp;
}

} // namespace

void load_share(self_ptr self) {
  auto& st = self->state;
  st.share = parse_share_policy(st.init.row.share_policy);
  st.share_next = st.share;
}

caf::result<share_view> handle(self_ptr self, const cmd::share_status&) {
  if (auto err = require_alive(self))
    return err;
  return describe(self, self->state.share);
}

caf::result<share_view> handle(self_ptr self, const cmd::share_enable& c) {
  auto root = self->state.init.paths.current(self->state.agent_id(),
                                             self->state.session_id());
  auto parts = split_share_path(c.scope);
  if (!parts)
    return parts.error();
  auto check = [root, parts = *parts]() -> expected<step_done> {
    auto r = os::workspace_root::open(root);
    if (!r)
      return r.error();
    if (auto err = os::share_check_scope(*r, parts))
      return err;
    return step_done{};
  };
  return change_policy(self, "share.enable", c.origin, std::move(check),
                       [c](share_policy) {
                         return share_policy{true, c.scope, c.permission};
                       });
}

caf::result<share_view> handle(self_ptr self, const cmd::share_disable& c) {
  // An empty step: in order with an enable still checking its scope.
  auto nothing = []() -> expected<step_done> {
    return step_done{};
  };
  return change_policy(self, "share.disable", c.origin, nothing,
                       [](share_policy p) {
                         p.enabled = false;
                         return p;
                       });
}

caf::result<share_listing> handle(self_ptr self, const cmd::share_list& c) {
  return ask_target<share_listing>(
      self, {c.target, c.session, share_op::list, c.path, {}});
}

caf::result<share_content> handle(self_ptr self, const cmd::share_read& c) {
  return ask_target<share_content>(
      self, {c.target, c.session, share_op::read, c.path, {}});
}

caf::result<share_written> handle(self_ptr self, const cmd::share_write& c) {
  return ask_target<share_written>(
      self, {c.target, c.session, share_op::write, c.path, c.data_base64});
}

caf::result<share_answer> handle(self_ptr self, const cmd::share_access& c) {
  auto& st = self->state;
  auto refuse = [self, &c](caf::error err) -> caf::result<share_answer> {
    ++self->state.share_refused;
    send_audit(self->state.init.metadata, access_audit(c, err));
    return err;
  };
  if (auto err = require_alive(self))
    return refuse(code_of(err) == errc::not_found ? not_enabled() : err);
  if (!st.share.enabled)
    return refuse(not_enabled());
  bool write = c.op == share_op::write;
  if (write && st.share.permission != "write")
    return refuse(make_error(errc::forbidden, "target share is read-only"));
  // As file.write: never under a checkpoint or rollback of the target.
  if (write && mutating(self))
    return refuse(
        conflict("session is being checkpointed or restored: " + st.key()));
  auto path = split_share_path(c.path);
  if (!path)
    return refuse(path.error());
  if (c.op != share_op::list && path->empty())
    return refuse(
        make_error(errc::invalid_argument, "read/write requires a file path"));
  auto parts = *split_share_path(st.share.scope);
  parts.insert(parts.end(), path->begin(), path->end());
  auto root = st.init.paths.current(st.agent_id(), st.session_id());
  auto metadata = st.init.metadata;
  // Who and what for share.write_prepared (never the data).
  auto prepared = c;
  prepared.data_base64.clear();
  auto job = [root, parts, op = c.op, data64 = c.data_base64, prepared,
              metadata]() -> expected<share_answer> {
    auto r = os::workspace_root::open(root);
    if (!r)
      return r.error();
    auto answer = [](auto done) -> expected<share_answer> {
      if (!done)
        return done.error();
      return share_answer{std::move(*done)};
    };
    switch (op) {
    case share_op::list:
      return answer(os::share_list(*r, parts));
    case share_op::read:
      return answer(os::share_read(*r, parts));
    case share_op::write:
      break;
    }
    auto data = decode_share_data(data64);
    if (!data)
      return data.error();
    auto size = static_cast<int64_t>(data->size());
    // Recorded once the data is durable, before it replaces the file.
    return answer(
        os::share_write(*r, parts, *data, [&prepared, &metadata, size] {
          send_audit(metadata, access_audit(prepared, "write_prepared",
                                            caf::none, {{"size", size}}));
        }));
  };
  auto who = c;
  who.data_base64.clear();
  std::string written; // the workspace path a write changes
  for (const auto& part : parts)
    written += (written.empty() ? "" : "/") + part;
  auto rp = self->make_response_promise<share_answer>();
  mutation_step<share_answer>(
      self, std::move(job),
      [self, rp, who, written](share_answer& v) mutable {
        ++self->state.share_served;
        json::object extra;
        if (auto* w = std::get_if<share_written>(&v)) {
          extra["size"] = w->written;
          // Write provenance: the caller's session wrote it.
          note_daemon_write(self, "share.write",
                            who.caller.agent_id + "/" + who.caller.session_id,
                            written, ALLOX_WRITE_DATA);
        }
        send_audit(self->state.init.metadata,
                   access_audit(who, caf::none, std::move(extra)));
        rp.deliver(std::move(v));
      },
      [self, rp, who](caf::error err) mutable {
        ++self->state.share_refused;
        send_audit(self->state.init.metadata, access_audit(who, err));
        rp.deliver(std::move(err));
      });
  return rp;
}

} // namespace allox::session_facets
