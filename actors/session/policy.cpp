// SPDX-License-Identifier: Apache-2.0
// The policy part of the SESSION's turns facet: policy.get/set at the
// session's level, and every automatic checkpoint (turns, successful runs,
// the interval timer) with the retention of keep_auto. Each checkpoint takes
// checkpoint.create's own path (create_checkpoint: guards, lane, intent
// record, catalog row, audit); pruning sends checkpoint.delete to this
// actor itself.
#include "actors/session/handlers.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "messages/results/turns_json.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>
#include <string>

namespace allox::session_facets {

namespace {

/// The origins of automatic checkpoints: only these are pruned.
bool automatic(const checkpoint_row& row) {
  return !row.pinned &&
         (row.origin == "turn-lifecycle" || row.origin == "policy-run" ||
          row.origin == "policy-interval" || row.origin == "pre-rollback");
}

/// 8 random hex characters, as the reference adapter's checkpoint ids.
std::string random_id() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string id(8, '0');
  auto bits = gen();
  for (auto& ch : id) {
    ch = hex[bits & 0xF];
    bits >>= 4;
  }
  return id;
}

session_actor me(self_ptr self) {
  return caf::actor_cast<session_actor>(self);
}

/// The policy.get result of this session.
policy_view describe(self_ptr self) {
  auto& st = self->state;
  return {st.agent_id(), st.session_id(), st.agent_policy, st.own_policy};
}

/// Sends the next tick of arming `epoch` after the interval.
void schedule_tick(self_ptr self, uint64_t epoch) {
  auto secs = policy_of(self).interval_seconds;
  if (secs <= 0 || epoch != self->state.interval_epoch)
    return;
  self->delayed_send(self, std::chrono::seconds{secs},
                     cmd::interval_tick{epoch});
}

} // namespace

// As Python's isoformat(), which the reference adapter writes.
std::string iso_now() {
  auto now = std::chrono::system_clock::now();
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                now.time_since_epoch())
                .count();
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lld+00:00",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec, static_cast<long long>(us % 1000000));
  return buf;
}

// One after the other through checkpoint.delete (re-parenting, audit); a
// failed deletion stops the pruning.
void prune(self_ptr self, std::function<void(std::vector<std::string>)> done) {
  auto keep = policy_of(self).keep_auto;
  if (keep <= 0)
    return done({});
  // Creation time and id of each automatic checkpoint: every turn end
  // comes here, so the rows are looked at, not copied.
  std::vector<std::pair<int64_t, std::string>> autos;
  self->state.dag.each([&autos](const checkpoint_row& row) {
    if (automatic(row) && !row.missing)
      autos.emplace_back(row.created_at_ns, row.checkpoint_id);
  });
  if (static_cast<int64_t>(autos.size()) <= keep)
    return done({});
  std::sort(autos.begin(), autos.end()); // oldest first
  autos.resize(autos.size() - static_cast<size_t>(keep));
  auto victims = std::make_shared<std::vector<std::string>>();
  for (auto& [created, id] : autos)
    victims->push_back(std::move(id));
  auto deleted = std::make_shared<std::vector<std::string>>();
  auto step = std::make_shared<std::function<void(size_t)>>();
  *step = [self, victims, deleted, done, step](size_t i) {
    if (i == victims->size()) {
      done(std::move(*deleted));
      *step = nullptr; // breaks the cycle
      return;
    }
    cmd::checkpoint_delete del{ref(self), (*victims)[i], false, "keep_auto"};
    self->request(me(self), caf::infinite, std::move(del))
        .then(
            [self, victims, deleted, step, i](checkpoint_deleted&) {
              ++self->state.auto_pruned;
              deleted->emplace_back((*victims)[i]);
              (*step)(i + 1);
            },
            [self, deleted, done, step](caf::error& err) {
              log::warn("session",
                        self->state.key() +
                            ": keep_auto could not delete: " + message_of(err));
              done(std::move(*deleted));
              *step = nullptr;
            });
  };
  (*step)(0);
}

effective_policy policy_of(self_ptr self) {
  return resolve(self->state.agent_policy, self->state.own_policy);
}

void auto_checkpoint(
    self_ptr self, auto_request req,
    std::function<void(expected<auto_checkpoint_result>)> done) {
  json::object metadata{{"auto", true}, {"event", req.event}};
  if (auto* turn = req.metadata.if_contains("turn"))
    metadata["turn"] = *turn;
  metadata["timestamp"] = iso_now();
  for (auto& kv : req.metadata)
    if (kv.key() != "turn")
      metadata[kv.key()] = kv.value();
  params::checkpoint_create c;
  c.checkpoint_id = random_id();
  c.message = req.message;
  c.metadata = json::serialize(metadata);
  c.pinned = false;
  c.origin = req.origin;
  auto id = c.checkpoint_id;
  auto event = req.event;
  create_checkpoint(
      self, c, [self, id, event, done](expected<checkpoint_row> cp) {
        auto_checkpoint_result r;
        r.event = event;
        r.checkpoint_id = id;
        if (!cp) {
          if (policy_of(self).strict)
            return done(cp.error());
          r.error = message_of(cp.error());
          return done(std::move(r));
        }
        r.checkpoint = checkpoint_created{std::move(*cp)};
        prune(self, [r, done](std::vector<std::string> pruned) mutable {
          r.pruned = std::move(pruned);
          done(std::move(r));
        });
      });
}

caf::result<policy_view> handle(self_ptr self, const cmd::policy_get&) {
  if (auto err = require_alive(self))
    return err;
  return describe(self);
}

// Applied in memory at once, so a second policy.set arriving before the
// commit builds on this one; durable before the reply, and audited.
caf::result<policy_view> handle(self_ptr self, const cmd::policy_set& c) {
  if (auto err = require_alive(self))
    return err;
  auto& st = self->state;
  // Kept as its catalog text: GCC 12 warns, wrongly, that a copy of
  // caf::optional fields captured by value may be uninitialised.
  auto before = serialize_policy(st.own_policy);
  st.own_policy = apply(st.own_policy, c.change);
  metadata_write w;
  w.set_policies.push_back(
      {st.agent_id(), st.session_id(), serialize_policy(st.own_policy)});
  w.audit.push_back(audit(self, "policy.set",
                          {{"level", "session"},
                           {"policy", to_json(st.own_policy)},
                           {"origin", c.origin}}));
  auto rp = self->make_response_promise<policy_view>();
  commit(
      self, std::move(w),
      [self, rp]() mutable {
        arm_interval(self);
        rp.deliver(describe(self));
      },
      [self, rp, before](caf::error err) mutable {
        self->state.own_policy = parse_policy(before);
        rp.deliver(std::move(err));
      });
  return rp;
}

void on_agent_policy(self_ptr self, const cmd::agent_policy_changed& c) {
  self->state.agent_policy = parse_policy(c.policy);
  arm_interval(self);
}

// -- interval checkpoints -----------------------------------------------------

void arm_interval(self_ptr self) {
  schedule_tick(self, ++self->state.interval_epoch);
}

// Nothing is taken while the session is busy (a mutation, an external
// lease; its own live runs are frozen for the snapshot instead)
// or when current/ has not changed since the head: the subvolume's
// generation (after committing the running transaction, which holds the
// latest writes) equals the head snapshot's until something is written.
void on_interval_tick(self_ptr self, const cmd::interval_tick& t) {
  auto& st = self->state;
  if (t.epoch != st.interval_epoch || policy_of(self).interval_seconds <= 0)
    return;
  if (require_checkpointable(self)) {
    ++st.interval_busy;
    return schedule_tick(self, t.epoch);
  }
  int64_t head_gen = 0;
  if (st.dag.head())
    if (auto* row = st.dag.find(*st.dag.head()); row && !row->missing)
      head_gen = row->generation;
  auto current = st.init.paths.current(st.agent_id(), st.session_id());
  auto epoch = t.epoch;
  auto decide = [self, head_gen, epoch](int64_t gen) {
    auto& state = self->state;
    if (head_gen != 0 && gen <= head_gen) {
      ++state.interval_unchanged;
      return schedule_tick(self, epoch);
    }
    json::object metadata{{"turn", state.turns.turn_count}};
    auto_checkpoint(self,
                    {"interval", "policy-interval", "interval checkpoint",
                     std::move(metadata)},
                    [self, epoch](expected<auto_checkpoint_result> r) {
                      if (r && r->checkpoint)
                        ++self->state.interval_checkpoints;
                      schedule_tick(self, epoch);
                    });
  };
  auto failed = [self, epoch](caf::error err) {
    log::warn("session", self->state.key() +
                             ": interval check failed: " + message_of(err));
    schedule_tick(self, epoch);
  };
  if (st.init.generation_probe) {
    auto gen = st.init.generation_probe(current);
    return gen ? decide(*gen) : failed(gen.error());
  }
  blocking<int64_t>(
      self,
      [current]() -> expected<int64_t> {
        auto gen = os::committed_generation(current);
        if (!gen)
          return gen.error();
        return static_cast<int64_t>(*gen);
      },
      decide, failed);
}

// -- runs ---------------------------------------------------------------------

void after_run(self_ptr self, const std::string& id,
               std::function<void(caf::error)> answer) {
  auto& st = self->state;
  auto it = st.runs.runs.find(id);
  if (it == st.runs.runs.end() || !policy_of(self).auto_checkpoint_runs)
    return answer(caf::none);
  const auto& row = it->second.row;
  bool success = row.state == run_phase::completed && row.root_exit_code &&
                 *row.root_exit_code == 0;
  if (!success)
    return answer(caf::none);
  json::object metadata{{"run_id", id}, {"exit_code", 0}};
  auto_checkpoint(self,
                  {"run_end", "policy-run", "run " + id, std::move(metadata)},
                  [self, id, answer](expected<auto_checkpoint_result> r) {
                    auto pos = self->state.runs.runs.find(id);
                    if (r && pos != self->state.runs.runs.end())
                      pos->second.row.auto_checkpoint = to_json(*r);
                    answer(r ? caf::error{} : r.error());
                  });
}

} // namespace allox::session_facets
