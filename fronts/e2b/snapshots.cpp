// SPDX-License-Identifier: Apache-2.0
// What E2B calls snapshots and forks, as the session's checkpoints: a
// snapshot is a checkpoint (taken live: the session's cgroup frozen for
// the snapshot, its processes kept), named `<sandbox>_<checkpoint>` so
// that a create from it finds its source; a fork, and a create from a
// snapshot, is session.fork into a new sandbox of the same agent.
//
//   POST /sandboxes/{id}/snapshots --> checkpoint.create (live)
//   GET /snapshots ------------------> checkpoint.list of each sandbox
//   POST /sandboxes/{id}/fork -------> session.fork x count (the source's
//                                      current/, checkpointed live first)
//   POST /v2/sandboxes {templateID: snapshot} --> session.fork from it
#include "fronts/e2b/handlers.hpp"

#include "messages/commands/agents.hpp"
#include "messages/commands/checkpoints.hpp"
#include "messages/ids.hpp"

#include <memory>

namespace allox::e2b {

namespace {

/// The checkpoint metadata key holding a snapshot's name.
constexpr std::string_view name_key = "e2b_snapshot";

std::string snapshot_id(const sandbox& sb, const std::string& checkpoint) {
  return sb.id + "_" + checkpoint;
}

/// A new sandbox like `source` (its template, metadata, variables), with
/// its own id, token and deadline.
sandbox derived(const sandbox& source, int64_t timeout_s) {
  sandbox sb = source;
  sb.id = new_sandbox_id();
  sb.access_token = random_hex_token();
  sb.started_ms = now_ms();
  sb.end_ms = sb.started_ms + timeout_s * 1000;
  sb.paused = false;
  return sb;
}

/// session.fork of `source` (at `checkpoint`, or its current/ checkpointed
/// first when empty) into `sb`, whose record is then kept.
void fork_into(front_self self, const sandbox& source, sandbox sb,
               const std::string& checkpoint,
               std::function<void(expected<sandbox>)> done) {
  cmd::session_fork c;
  c.session = session_ref{source.agent, source.id};
  c.new_session_id = sb.id;
  c.checkpoint_id = checkpoint;
  c.origin = "e2b";
  self->request(self->state.init.agents, caf::infinite, c)
      .then(
          [self, sb, done](session_forked&) mutable {
            auto& kept = self->state.sandboxes[sb.id] = sb;
            settle(self, kept, [sb, done](caf::error err) {
              if (err)
                return done(err);
              done(sb);
            });
          },
          [done](caf::error& err) { done(err); });
}

/// {"code", "message"} of a fork that failed, as the SDK maps it.
json::object fork_error(const caf::error& err) {
  auto code = code_of(err);
  int status = code == errc::not_found          ? 404
               : code == errc::invalid_argument ? 400
               : code == errc::conflict         ? 409
                                                : 500;
  return {{"code", status}, {"message", message_of(err)}};
}

/// Forks one after the other (each from the source as it is then).
void fork_next(front_self self, std::string source_id, int64_t left,
               int64_t timeout_s, std::shared_ptr<json::array> results,
               http::responder answer) {
  auto it = self->state.sandboxes.find(source_id);
  if (left == 0 || it == self->state.sandboxes.end()) {
    answer_json(answer, 201, *results);
    return;
  }
  auto sb = derived(it->second, timeout_s);
  fork_into(self, it->second, std::move(sb), {}, [=](expected<sandbox> made) {
    if (made)
      results->emplace_back(json::object{{"sandbox", created_json(*made)}});
    else
      results->emplace_back(json::object{{"error", fork_error(made.error())}});
    fork_next(self, source_id, left - 1, timeout_s, results, answer);
  });
}

/// Lists the snapshots of the sandboxes from `ids[i]` on.
void list_from(front_self self, std::shared_ptr<std::vector<std::string>> ids,
               size_t i, std::shared_ptr<json::array> out,
               http::responder answer) {
  if (i == ids->size())
    return answer_json(answer, 200, *out);
  auto it = self->state.sandboxes.find((*ids)[i]);
  if (it == self->state.sandboxes.end())
    return list_from(self, ids, i + 1, out, answer);
  auto sb = it->second;
  call_session(
      self, sb.agent, sb.id, cmd::checkpoint_list{{}, {}, 0},
      [=](checkpoint_page& page) {
        for (const auto& rec : page.checkpoints) {
          if (!rec.row.metadata)
            continue;
          boost::system::error_code ec;
          auto meta = json::parse(*rec.row.metadata, ec);
          const json::value* name = !ec && meta.is_object()
                                        ? meta.as_object().if_contains(name_key)
                                        : nullptr;
          if (name == nullptr)
            continue;
          json::array names;
          if (name->is_string() && !name->as_string().empty())
            names.push_back(*name);
          out->emplace_back(json::object{
              {"snapshotID", snapshot_id(sb, rec.row.checkpoint_id)},
              {"names", std::move(names)}});
        }
        list_from(self, ids, i + 1, out, answer);
      },
      [=](caf::error&) { list_from(self, ids, i + 1, out, answer); });
}

} // namespace

void take_snapshot(front_self self, request& req, const sandbox& sb,
                   const json::object& body) {
  std::string name;
  if (auto* n = body.if_contains("name"); n != nullptr && !n->is_null()) {
    if (!n->is_string())
      return answer_error(req.answer(), 400, "name must be a string");
    name = std::string{n->as_string()};
  }
  cmd::checkpoint_create c;
  c.req.checkpoint_id = "snap-" + random_hex_token().substr(0, 12);
  c.req.message =
      std::string{"e2b snapshot"} + (name.empty() ? "" : " ") + name;
  c.req.metadata = json::serialize(json::object{{name_key, name}});
  c.req.origin = "e2b";
  auto answer = req.answer();
  auto box = sb;
  call_session(
      self, sb.agent, sb.id, std::move(c),
      [box, name, answer](checkpoint_created& made) {
        json::array names;
        if (!name.empty())
          names.emplace_back(name);
        answer_json(answer, 201,
                    json::object{{"snapshotID",
                                  snapshot_id(box, made.row.checkpoint_id)},
                                 {"names", std::move(names)}});
      },
      [answer](caf::error& err) { answer_error(answer, err); });
}

void list_snapshots(front_self self, request& req) {
  auto ids = std::make_shared<std::vector<std::string>>();
  auto only = req.param("sandboxID");
  for (const auto& [id, sb] : self->state.sandboxes)
    if (only.empty() || id == only)
      ids->push_back(id);
  list_from(self, ids, 0, std::make_shared<json::array>(), req.answer());
}

void fork_sandbox(front_self self, request& req, const sandbox& sb,
                  const json::object& body) {
  int64_t count = 1;
  if (auto* c = body.if_contains("count"); c != nullptr && !c->is_null()) {
    if (!c->is_int64() || c->as_int64() < 1 || c->as_int64() > 100)
      return answer_error(req.answer(), 400, "count must be 1..100");
    count = c->as_int64();
  }
  int64_t timeout_s = (sb.end_ms - now_ms()) / 1000;
  if (auto* t = body.if_contains("timeout"); t != nullptr && !t->is_null()) {
    auto s = decode_timeout(*t);
    if (!s)
      return answer_error(req.answer(), s.error());
    timeout_s = *s;
  }
  fork_next(self, sb.id, count, std::max<int64_t>(timeout_s, 1),
            std::make_shared<json::array>(), req.answer());
}

bool create_from_snapshot(front_self self, const std::string& template_id,
                          sandbox sb, const http::responder& answer) {
  auto cut = template_id.find('_');
  if (cut == std::string::npos)
    return false;
  auto it = self->state.sandboxes.find(template_id.substr(0, cut));
  if (it == self->state.sandboxes.end())
    return false;
  // The snapshot's agent: a fork never leaves its agent.
  sb.agent = it->second.agent;
  fork_into(self, it->second, std::move(sb), template_id.substr(cut + 1),
            [answer](expected<sandbox> made) {
              if (!made)
                return answer_error(answer, made.error());
              answer_json(answer, 201, created_json(*made));
            });
  return true;
}

std::string new_sandbox_id() {
  // An E2B-style id (lowercase letters and digits), valid as ours.
  return "i" + random_hex_token().substr(0, 19);
}

} // namespace allox::e2b
