// SPDX-License-Identifier: Apache-2.0
// E2B's pause, connect (resume) and metrics over session.pause,
// session.resume and session.usage. A paused sandbox keeps its processes
// frozen in memory (or, with memory: false, only its files) and the
// checkpoint the pause took; connect thaws it. After a daemon restart the
// processes are gone and connect resumes the files only, which the
// session's own state tells (session.resume answers no runs).
#include "fronts/e2b/handlers.hpp"

#include "messages/commands/pause.hpp"

#include <algorithm>
#include <thread>

namespace allox::e2b {

namespace {

/// E2B's default when a connect gives no timeout (seconds).
constexpr int64_t default_timeout_s = 300;

} // namespace

void pause_sandbox(front_self self, const std::string& id, bool keep_memory,
                   std::function<void(caf::error)> done) {
  auto it = self->state.sandboxes.find(id);
  if (it == self->state.sandboxes.end())
    return done(make_error(errc::not_found, "sandbox " + id + " not found"));
  if (it->second.paused)
    return done(
        make_error(errc::conflict, "sandbox " + id + " is already paused"));
  cmd::session_pause c;
  c.keep_memory = keep_memory;
  c.message = "e2b pause";
  c.origin = "e2b";
  call_session(
      self, it->second.agent, id, c,
      [self, id, done](pause_result&) {
        auto found = self->state.sandboxes.find(id);
        if (found == self->state.sandboxes.end())
          return done(caf::none);
        found->second.paused = true;
        save(self, found->second, done);
      },
      [done](caf::error& err) { done(err); });
}

void pause_route(front_self self, request& req, const sandbox& sb,
                 const json::object& body) {
  bool keep = true;
  if (auto* m = body.if_contains("memory"); m != nullptr && !m->is_null()) {
    if (!m->is_bool())
      return answer_error(req.answer(), 400, "memory must be a boolean");
    keep = m->as_bool();
  }
  pause_sandbox(self, sb.id, keep, [answer = req.answer()](caf::error err) {
    if (err)
      return answer_error(answer, err);
    answer_json(answer, 204, nullptr);
  });
}

void connect_to(front_self self, request& req, sandbox& sb,
                const json::object& body) {
  caf::optional<int64_t> timeout_s;
  if (auto* t = body.if_contains("timeout"); t != nullptr && !t->is_null()) {
    auto s = decode_timeout(*t);
    if (!s)
      return answer_error(req.answer(), s.error());
    timeout_s = *s;
  }
  if (!sb.paused) {
    // Running: the create answer again; a longer timeout extends it.
    if (timeout_s)
      sb.end_ms = std::max(sb.end_ms, now_ms() + *timeout_s * 1000);
    return save(
        self, sb,
        [answer = req.answer(), created = created_json(sb)](caf::error err) {
          if (err)
            return answer_error(answer, err);
          answer_json(answer, 200, created);
        });
  }
  auto id = sb.id;
  auto resumed = [self, id, timeout_s, answer = req.answer()]() {
    auto it = self->state.sandboxes.find(id);
    if (it == self->state.sandboxes.end())
      return answer_error(answer, 404, "sandbox " + id + " not found");
    auto& s = it->second;
    s.paused = false;
    s.end_ms = now_ms() + timeout_s.value_or(default_timeout_s) * 1000;
    save(self, s, [answer, created = created_json(s)](caf::error err) {
      if (err)
        return answer_error(answer, err);
      answer_json(answer, 201, created);
    });
  };
  call_session(
      self, sb.agent, id, cmd::session_resume{{}, "e2b"},
      [resumed](resume_result&) { resumed(); },
      [resumed, answer = req.answer()](caf::error& err) {
        // Paused before a daemon restart: the session is not paused any
        // more (its processes ended with the daemon), only its files are
        // left to resume.
        if (code_of(err) == errc::conflict)
          return resumed();
        answer_error(answer, err);
      });
}

void metrics_route(front_self self, request& req, const sandbox& sb) {
  auto id = sb.id;
  call_session(
      self, sb.agent, id, cmd::session_usage{},
      [self, id, answer = req.answer()](usage_report& u) {
        auto it = self->state.sandboxes.find(id);
        if (it == self->state.sandboxes.end())
          return answer_error(answer, 404, "sandbox " + id + " not found");
        auto& s = it->second;
        // CPU use since the previous sample (the first: since the start),
        // as a share of every core.
        auto cores = std::max(1u, std::thread::hardware_concurrency());
        auto since_ns =
            s.last_sample_ns != 0 ? s.last_sample_ns : s.started_ms * 1000000;
        auto wall_us = std::max<int64_t>(1, (u.sampled_ns - since_ns) / 1000);
        auto used_us = std::max<int64_t>(0, u.cpu_usage_usec - s.last_cpu_usec);
        double pct = 100.0 * static_cast<double>(used_us) /
                     (static_cast<double>(wall_us) * cores);
        s.last_cpu_usec = u.cpu_usage_usec;
        s.last_sample_ns = u.sampled_ns;
        json::array out;
        out.emplace_back(
            json::object{{"timestamp", rfc3339(u.sampled_ns / 1000000)},
                         {"timestampUnix", u.sampled_ns / 1000000000},
                         {"cpuCount", cores},
                         {"cpuUsedPct", std::min(100.0, pct)},
                         {"memUsed", u.memory_bytes},
                         {"memTotal", u.memory_total_bytes},
                         {"memCache", 0},
                         {"diskUsed", u.disk_used_bytes},
                         {"diskTotal", u.disk_total_bytes}});
        answer_json(answer, 200, out);
      },
      [answer = req.answer()](caf::error& err) { answer_error(answer, err); });
}

} // namespace allox::e2b
