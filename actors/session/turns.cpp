// SPDX-License-Identifier: Apache-2.0
// The turns facet of the SESSION actor: turn.session_start, turn.message,
// turn.end and turn.status with the reference adapter's semantics
// (TurnCheckpointLifecycle, docs/rpc.md), in the daemon. The state is the
// adapter's, kept in the session's catalog row and written before each
// reply, so neither an actor restart nor a daemon restart forgets a turn.
#include "actors/session/handlers.hpp"
#include "guest/log.hpp"

#include <memory>
#include <string>

namespace allox::session_facets {

namespace {

/// The reference's MESSAGE_LIMIT, in characters.
constexpr size_t message_limit = 80;

/// The first `n` characters (code points) of UTF-8 text.
std::string cut_chars(const std::string& s, size_t n) {
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80 && chars++ == n)
      return s.substr(0, i);
  }
  return s;
}

json::object to_json(const turn_state& t) {
  json::array seen;
  for (const auto& id : t.seen_turn_ids)
    seen.emplace_back(id);
  return {{"turn_count", t.turn_count},
          {"session_started", t.session_started},
          {"skip_next", t.skip_next},
          {"message", t.message},
          {"runtime_session_id", t.runtime_session_id},
          {"seen_turn_ids", std::move(seen)}};
}

turn_state parse_turns(const caf::optional<std::string>& text) {
  turn_state t;
  if (!text)
    return t;
  boost::system::error_code ec;
  auto v = json::parse(*text, ec);
  if (ec || !v.is_object())
    return t;
  const auto& o = v.as_object();
  auto str = [&o](const char* k) {
    auto* x = o.if_contains(k);
    return x && x->is_string() ? std::string{x->get_string()} : std::string{};
  };
  auto flag = [&o](const char* k) {
    auto* x = o.if_contains(k);
    return x && x->is_bool() && x->get_bool();
  };
  if (auto* n = o.if_contains("turn_count"); n && n->is_int64())
    t.turn_count = n->get_int64();
  t.session_started = flag("session_started");
  t.skip_next = flag("skip_next");
  t.message = str("message");
  t.runtime_session_id = str("runtime_session_id");
  if (auto* seen = o.if_contains("seen_turn_ids"); seen && seen->is_array())
    for (const auto& id : seen->as_array())
      if (id.is_string())
        t.seen_turn_ids.emplace_back(id.get_string());
  return t;
}

/// The state's catalog write.
session_settings turn_row(self_ptr self) {
  return {self->state.agent_id(), self->state.session_id(),
          json::serialize(to_json(self->state.turns))};
}

/// Commits the turn state (not synced: atomic and safe against a killed
/// daemon), then `next`. A failed write is logged, not fatal to the turn:
/// the reference never fails a turn over its bookkeeping.
void save_turns(self_ptr self, std::function<void()> next) {
  metadata_write w;
  w.durable = false;
  w.set_turn_states.push_back(turn_row(self));
  commit(self, std::move(w), next, [self, next](caf::error err) {
    log::warn("session", self->state.key() + ": cannot save the turn state: " +
                             message_of(err));
    next();
  });
}

turn_result skipped(const char* event, turn_skip why,
                    std::string turn_id = {}) {
  turn_result r;
  r.enabled = why != turn_skip::disabled;
  r.event = event;
  r.skipped = why;
  r.turn_id = std::move(turn_id);
  return r;
}

/// Starts the next queued turn checkpoint, if any.
void next_turn_checkpoint(self_ptr self) {
  auto& st = self->state;
  st.turn_checkpointing = false;
  if (st.turn_waiting.empty())
    return;
  auto next = std::move(st.turn_waiting.front());
  st.turn_waiting.pop_front();
  next();
}

/// Saves the state and takes the turn's checkpoint at the same time (the
/// catalog commit overlaps the snapshot; METADATA still commits the state
/// before the checkpoint's row), and answers once both are done. One turn
/// checkpoint at a time, in arrival order, as the reference adapter's lock
/// serialises its hooks: a second turn.end does not fail on the first's.
caf::result<turn_result> checkpoint_turn(self_ptr self, auto_request req) {
  auto rp = self->make_response_promise<turn_result>();
  auto run = [self, rp, req = std::move(req)]() mutable {
    self->state.turn_checkpointing = true;
    struct pending {
      bool saved = false;
      caf::optional<expected<auto_checkpoint_result>> result;
    };
    auto both = std::make_shared<pending>();
    auto answer = [self, both, rp]() mutable {
      if (!both->saved || !both->result)
        return;
      auto& r = *both->result;
      if (r) {
        turn_result t;
        t.enabled = true;
        t.event = r->event;
        t.checkpoint = std::move(*r);
        rp.deliver(std::move(t));
      } else
        rp.deliver(r.error());
      next_turn_checkpoint(self);
    };
    save_turns(self, [both, answer]() mutable {
      both->saved = true;
      answer();
    });
    auto_checkpoint(self, std::move(req),
                    [both, answer](expected<auto_checkpoint_result> r) mutable {
                      both->result = std::move(r);
                      answer();
                    });
  };
  if (self->state.turn_checkpointing)
    self->state.turn_waiting.emplace_back(std::move(run));
  else
    run();
  return rp;
}

/// Saves the state, then answers with `result`.
caf::result<turn_result> save_and_reply(self_ptr self, turn_result result) {
  auto rp = self->make_response_promise<turn_result>();
  save_turns(self, [rp, result = std::move(result)]() mutable {
    rp.deliver(std::move(result));
  });
  return rp;
}

} // namespace

void load_turns(self_ptr self) {
  auto& st = self->state;
  st.turns = parse_turns(st.init.row.turn_state);
  st.own_policy = parse_policy(st.init.row.policy);
  st.agent_policy = parse_policy(st.init.agent_policy);
}

// Once per session: a second start is a duplicate even when the first
// one's checkpoint failed, as in the reference.
caf::result<turn_result> handle(self_ptr self,
                                const cmd::turn_session_start& c) {
  if (auto err = require_alive(self))
    return err;
  if (!policy_of(self).auto_checkpoint_turns)
    return skipped("session_start", turn_skip::disabled);
  auto& t = self->state.turns;
  if (t.session_started)
    return skipped("session_start", turn_skip::duplicate);
  t.session_started = true;
  t.runtime_session_id = c.runtime_session_id;
  json::object metadata{{"turn", 0}};
  if (!c.runtime_session_id.empty())
    metadata["runtime_session_id"] = c.runtime_session_id;
  return checkpoint_turn(self, {"session_start", "turn-lifecycle",
                                "session-start", std::move(metadata)});
}

// Captured even while turns are disabled, as in the reference: enabling
// them mid-turn still names the checkpoint after the user's message.
caf::result<turn_result> handle(self_ptr self, const cmd::turn_message& c) {
  if (auto err = require_alive(self))
    return err;
  auto& t = self->state.turns;
  t.message = cut_chars(c.message, message_limit);
  turn_result r;
  r.enabled = policy_of(self).auto_checkpoint_turns;
  r.event = "message_received";
  r.captured = !t.message.empty();
  return save_and_reply(self, std::move(r));
}

// The reference's order: disabled, duplicate id (remembered even when the
// turn is then skipped), the rollback skip (once), then the counter moves
// and the checkpoint is taken; a failed checkpoint keeps the new count.
caf::result<turn_result> handle(self_ptr self, const cmd::turn_end& c) {
  if (auto err = require_alive(self))
    return err;
  if (!policy_of(self).auto_checkpoint_turns)
    return skipped("turn_end", turn_skip::disabled);
  auto& t = self->state.turns;
  const auto& id = c.turn_id;
  if (!id.empty()) {
    for (const auto& seen : t.seen_turn_ids)
      if (seen == id)
        return skipped("turn_end", turn_skip::duplicate, id);
    t.seen_turn_ids.push_back(id);
    if (t.seen_turn_ids.size() > max_seen_turn_ids)
      t.seen_turn_ids.pop_front();
  }
  if (t.skip_next) {
    t.skip_next = false;
    return save_and_reply(self, skipped("turn_end", turn_skip::rollback, id));
  }
  ++t.turn_count;
  json::object metadata{{"turn", t.turn_count},
                        {"success", c.completed},
                        {"interrupted", c.interrupted}};
  if (!id.empty())
    metadata["turn_id"] = id;
  auto message = t.message.empty() ? std::string{"agent turn"} : t.message;
  return checkpoint_turn(
      self, {"turn_end", "turn-lifecycle", message, std::move(metadata)});
}

caf::result<turn_status_view> handle(self_ptr self, const cmd::turn_status&) {
  if (auto err = require_alive(self))
    return err;
  const auto& st = self->state;
  const auto& t = st.turns;
  return turn_status_view{policy_of(self).auto_checkpoint_turns,
                          st.agent_id(),
                          st.session_id(),
                          t.turn_count,
                          t.session_started,
                          t.skip_next,
                          t.runtime_session_id};
}

// Every rollback, not only the adapter's: the turn that asked for it ends
// on the restored tree, which is already a checkpoint.
void mark_rollback(self_ptr self, metadata_write& w) {
  self->state.turns.skip_next = true;
  w.set_turn_states.push_back(turn_row(self));
}

} // namespace allox::session_facets
