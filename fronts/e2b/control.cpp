// SPDX-License-Identifier: Apache-2.0
// E2B's control plane: sandboxes created, listed, described, given more
// time and killed. A sandbox is a session of its agent; the front keeps
// what E2B knows beyond it (sandboxes.hpp).
#include "fronts/e2b/handlers.hpp"

#include "guest/http/server.hpp"
#include "guest/log.hpp"
#include "messages/commands/agents.hpp"
#include "messages/commands/runs.hpp"
#include "messages/ids.hpp"

#include <memory>
#include <vector>

namespace allox::e2b {

namespace bhttp = boost::beast::http;

namespace {

constexpr std::string_view origin = "e2b";

std::vector<std::string> segments(std::string_view path) {
  std::vector<std::string> out;
  while (!path.empty()) {
    auto slash = path.find('/');
    if (slash != 0)
      out.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos)
      break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

/// The body as JSON ({} when empty); null when it is not JSON.
caf::optional<json::value> json_body(const request& req) {
  const auto& body = req.http().body();
  if (body.empty())
    return json::value(json::object{});
  boost::system::error_code ec;
  auto doc = json::parse(body, ec);
  if (ec)
    return caf::none;
  return doc;
}

void not_found(const request& req, const std::string& id) {
  answer_error(req.answer(), 404, "sandbox " + id + " not found");
}

// -- handlers -----------------------------------------------------------------

/// POST /v2/sandboxes (and /sandboxes): a new session of the sandbox's
/// agent, created (with the agent) by AGENTS.
void create(front_self self, request& req) {
  auto body = json_body(req);
  if (!body)
    return answer_error(req.answer(), 400, "the body is not JSON");
  auto asked = decode_create(*body);
  if (!asked)
    return answer_error(req.answer(), asked.error());
  sandbox sb;
  sb.agent = self->state.init.default_agent;
  if (auto it = asked->metadata.find("allox.agent");
      it != asked->metadata.end())
    sb.agent = it->second;
  if (auto err = validate_id("agent", sb.agent))
    return answer_error(req.answer(), err);
  sb.id = new_sandbox_id();
  sb.template_id = asked->template_id;
  sb.metadata = std::move(asked->metadata);
  sb.envs = std::move(asked->envs);
  sb.network = asked->network;
  sb.at_timeout = asked->at_timeout;
  sb.pause_memory = asked->pause_memory;
  sb.access_token = random_hex_token();
  sb.started_ms = now_ms();
  sb.end_ms = sb.started_ms + asked->timeout_s * 1000;
  if (sb.template_id != "base") {
    if (create_from_snapshot(self, sb.template_id, sb, req.answer()))
      return;
    return answer_error(req.answer(), 400,
                        "template " + sb.template_id +
                            " is not known: this daemon serves the base "
                            "template and snapshots of its sandboxes");
  }
  cmd::session_create c{session_ref{sb.agent, sb.id}, std::string{origin}};
  auto answer = req.answer();
  self->request(self->state.init.agents, caf::infinite, c)
      .then(
          [self, sb, answer](session_view&) mutable {
            auto id = sb.id;
            auto& kept = self->state.sandboxes[id] = std::move(sb);
            // Answered once the record is durable: a sandbox the client
            // was told of survives a crash.
            settle(self, kept,
                   [answer, created = created_json(kept)](caf::error err) {
                     if (err)
                       return answer_error(answer, err);
                     answer_json(answer, 201, created);
                   });
          },
          [self, answer](caf::error& err) {
            ++self->state.errors;
            answer_error(answer, err);
          });
}

/// GET /v2/sandboxes and /sandboxes: a page by id, X-Next-Token naming the
/// next.
void list(front_self self, request& req) {
  auto q = decode_list_query(req.query);
  if (!q)
    return answer_error(req.answer(), q.error());
  std::string next;
  json::array items;
  for (const auto* sb : list_page(self->state.sandboxes, *q, next))
    items.emplace_back(listed_json(*sb));
  http::route_response r{200, "application/json", json::serialize(items), {}};
  if (!next.empty())
    r.headers.emplace_back("X-Next-Token", next);
  req.answer()(std::move(r));
}

/// Ends a sandbox: its live runs stopped (a session with runs is not
/// deleted), then its session deleted, which takes its record along; the
/// sandbox leaves the table once that is done, and stays (no longer
/// ending) if it failed.
void end_sandbox(front_self self, const std::string& id, const std::string& why,
                 std::function<void(caf::error)> done) {
  auto it = self->state.sandboxes.find(id);
  if (it == self->state.sandboxes.end())
    return done(caf::none);
  it->second.ending = true;
  auto agent = it->second.agent;
  auto remove = [self, id, agent, why, done] {
    cmd::session_delete_request c{session_ref{agent, id}, why};
    self->request(self->state.init.agents, caf::infinite, c)
        .then(
            [self, id, done](session_deleted&) {
              self->state.sandboxes.erase(id);
              self->state.pids.erase(id);
              done(caf::none);
            },
            [self, id, done](caf::error& err) {
              ++self->state.errors;
              if (code_of(err) == errc::not_found) {
                // Deleted on the native wire meanwhile: gone all the same.
                self->state.sandboxes.erase(id);
                self->state.pids.erase(id);
                return done(caf::none);
              }
              if (auto kept = self->state.sandboxes.find(id);
                  kept != self->state.sandboxes.end())
                kept->second.ending = false;
              done(err);
            });
  };
  call_session(
      self, agent, id, cmd::process_list{{}, 0, {}},
      [self, agent, id, remove](run_list& list) {
        auto left = std::make_shared<size_t>(0);
        for (const auto& row : list.runs)
          if (!is_final(row.state))
            ++*left;
        if (*left == 0)
          return remove();
        for (const auto& row : list.runs)
          if (!is_final(row.state))
            call_session(
                self, agent, id, cmd::process_stop{{}, row.run_id},
                [left, remove](run_row&) {
                  if (--*left == 0)
                    remove();
                },
                [left, remove](caf::error&) {
                  // Ended by itself meanwhile, or not: the delete says.
                  if (--*left == 0)
                    remove();
                });
      },
      [remove](caf::error&) { remove(); });
}

/// DELETE /sandboxes/{id}: its runs killed, then its session deleted.
void kill(front_self self, request& req, const std::string& id) {
  auto it = self->state.sandboxes.find(id);
  if (it == self->state.sandboxes.end() || it->second.ending)
    return not_found(req, id);
  end_sandbox(self, id, std::string{origin},
              [answer = req.answer()](caf::error err) {
                if (err)
                  return answer_error(answer, err);
                answer_json(answer, 204, nullptr);
              });
}

/// POST /sandboxes/{id}/timeout {timeout}: the deadline is now + timeout.
void set_timeout(front_self self, request& req, sandbox& sb) {
  auto body = json_body(req);
  if (!body || !body->is_object() || !body->as_object().contains("timeout"))
    return answer_error(req.answer(), 400,
                        "the body must be {\"timeout\": seconds}");
  auto t = decode_timeout(body->as_object().at("timeout"));
  if (!t)
    return answer_error(req.answer(), t.error());
  sb.end_ms = now_ms() + *t * 1000;
  save(self, sb, [answer = req.answer()](caf::error err) {
    if (err)
      return answer_error(answer, err);
    answer_json(answer, 204, nullptr);
  });
}

} // namespace

void serve_control(front_self self, request& req) {
  const auto& token = self->state.init.token;
  auto key = req.header("X-API-Key");
  if (key.empty() || (!token.empty() && !http::secret_matches(key, token)))
    return answer_error(req.answer(), 401,
                        key.empty() ? "X-API-Key is required"
                                    : "X-API-Key does not match the "
                                      "daemon's token");
  auto parts = segments(req.path);
  if (!parts.empty() && (parts[0] == "v2" || parts[0] == "v1"))
    parts.erase(parts.begin());
  auto method = req.http().method();
  if (parts.size() == 1 && parts[0] == "sandboxes") {
    if (method == bhttp::verb::post)
      return create(self, req);
    if (method == bhttp::verb::get)
      return list(self, req);
  }
  if (parts.size() == 1 && parts[0] == "snapshots" &&
      method == bhttp::verb::get)
    return list_snapshots(self, req);
  if (parts.size() >= 2 && parts[0] == "sandboxes") {
    const auto& id = parts[1];
    if (parts.size() == 2 && method == bhttp::verb::delete_)
      return kill(self, req, id);
    auto it = self->state.sandboxes.find(id);
    if (it == self->state.sandboxes.end())
      return not_found(req, id);
    auto& sb = it->second;
    if (parts.size() == 2 && method == bhttp::verb::get)
      return answer_json(req.answer(), 200, detail_json(sb));
    if (parts.size() == 3 && method == bhttp::verb::post) {
      if (parts[2] == "timeout")
        return set_timeout(self, req, sb);
      auto body = json_body(req);
      if (!body || !body->is_object())
        return answer_error(req.answer(), 400, "the body is not a JSON object");
      const auto& o = body->as_object();
      if (parts[2] == "connect")
        return connect_to(self, req, sb, o);
      if (parts[2] == "pause")
        return pause_route(self, req, sb, o);
      if (parts[2] == "snapshots")
        return take_snapshot(self, req, sb, o);
      if (parts[2] == "fork")
        return fork_sandbox(self, req, sb, o);
    }
    if (parts.size() == 3 && parts[2] == "metrics" &&
        method == bhttp::verb::get)
      return metrics_route(self, req, sb);
    if (parts.size() == 3 && parts[2] == "network" &&
        method == bhttp::verb::put) {
      auto body = json_body(req);
      if (!body || !body->is_object())
        return answer_error(req.answer(), 400, "the body is not a JSON object");
      return network_route(self, req, sb, body->as_object());
    }
  }
  answer_error(req.answer(), 404, "no such route: " + req.path);
}

void settle(front_self self, const sandbox& sb,
            std::function<void(caf::error)> done) {
  // E2B runs several processes of a sandbox at once.
  auto c = network_settings(sb.network);
  c.max_runs = cmd::max_runs_limit;
  auto id = sb.id;
  call_session(
      self, sb.agent, id, c,
      [self, id, done](settings_view&) {
        auto it = self->state.sandboxes.find(id);
        if (it == self->state.sandboxes.end())
          return done(caf::none);
        save(self, it->second, done);
      },
      [self, id, done](caf::error& err) {
        // A daemon without tracked execution runs nothing: files only.
        auto it = self->state.sandboxes.find(id);
        if (code_of(err) != errc::unsupported ||
            it == self->state.sandboxes.end())
          return done(err);
        save(self, it->second, done);
      });
}

void save(front_self self, const sandbox& sb,
          std::function<void(caf::error)> done) {
  metadata_write w;
  w.set_front_records.push_back({sb.agent, sb.id, to_record(sb)});
  self->request(self->state.init.metadata, caf::infinite, atom::write_v,
                std::move(w))
      .then([done](caf::ok_atom) { done(caf::none); },
            [done](caf::error& err) { done(err); });
}

void expire_sandboxes(front_self self) {
  auto now = now_ms();
  std::vector<std::string> due;
  std::vector<std::pair<std::string, bool>> to_pause;
  for (const auto& [id, sb] : self->state.sandboxes) {
    // A paused sandbox waits for its connect, however long (as on E2B).
    if (sb.end_ms > now || sb.ending || sb.paused)
      continue;
    if (sb.at_timeout == on_timeout::pause)
      to_pause.emplace_back(id, sb.pause_memory);
    else
      due.push_back(id);
  }
  for (const auto& [id, memory] : to_pause)
    pause_sandbox(self, id, memory, [id = id](caf::error err) {
      if (err && code_of(err) != errc::conflict)
        log::warn("e2b", "sandbox " + id + " past its timeout, not paused: " +
                             message_of(err));
    });
  for (const auto& id : due)
    end_sandbox(
        self, id, std::string{origin} + ":timeout", [id](caf::error err) {
          if (err)
            log::warn("e2b", "sandbox " + id +
                                 " past its timeout: " + message_of(err));
        });
}

} // namespace allox::e2b
