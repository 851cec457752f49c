// SPDX-License-Identifier: Apache-2.0
// What an actor reports about itself, typed: every actor answers
// `atom::stats` with an actor_stats (messages/actors.hpp,
// stats_client_actor), and both views of the tree are rendered from it:
// system.dump's JSON (messages/results/stats_json.hpp) and the Prometheus
// exposition (guest/http/metrics.cpp).
//
// The entries are an ordered list rather than fixed fields because
// system.dump's key order is part of the native wire (its golden file):
// the JSON renderer writes them in the order the actor added them. Each
// entry also says what it is (counter, gauge, fact, histogram), so the
// metrics renderer exports counters as counters and never has to guess
// from a key's name.
#pragma once

#include <caf/meta/type_name.hpp>
#include <caf/variant.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace allox {

/// What an entry measures, which decides how /metrics exports it.
enum class stats_kind : uint8_t {
  /// Only counts up while the actor lives (requests, failures ...).
  counter,
  /// Goes up and down (mailbox, live runs, live checkpoints ...).
  gauge,
  /// Not a measurement: a state, a path, an id, a flag. Never exported
  /// as a sample.
  fact,
  /// A latency histogram (its value is a stats_histogram).
  histogram,
};

/// The kind's name, for CAF's printouts.
inline std::string to_string(stats_kind k) {
  switch (k) {
  case stats_kind::counter:
    return "counter";
  case stats_kind::gauge:
    return "gauge";
  case stats_kind::fact:
    return "fact";
  case stats_kind::histogram:
    break;
  }
  return "histogram";
}

/// JSON null (a session without a head, a tracker without an error).
struct stats_null {};

/// The buckets of a fixed-bounds latency histogram (guest/histogram.hpp
/// owns the bounds), as system.dump spells it: {counts, sum, count}.
struct stats_histogram {
  std::vector<uint64_t> counts;
  double sum = 0;
  uint64_t count = 0;
};

/// Serialized JSON, for a nested value that has no typed shape of its
/// own (a session's egress policy). Rendered back as JSON in system.dump;
/// never exported as a metric.
struct stats_json {
  std::string text;
};

/// An entry's value. Signed and unsigned integers stay apart so the JSON
/// keeps the number type the actor reported.
using stats_value = caf::variant<stats_null, bool, int64_t, uint64_t, double,
                                 std::string, stats_histogram, stats_json>;

/// One reported value.
struct stats_entry {
  /// Where it sits: empty for the top level, else a group ("counters",
  /// "resources", "turns" ...); '/' nests ("counters/events_lost").
  std::string group;
  std::string name;
  stats_kind kind = stats_kind::fact;
  stats_value value;
};

/// Converts what actors hold (sizes, counters, strings, flags) to a
/// stats_value.
template <class T>
stats_value to_stats_value(T&& x) {
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, stats_value>)
    return std::forward<T>(x);
  else if constexpr (std::is_same_v<U, bool>)
    return stats_value{x};
  else if constexpr (std::is_same_v<U, std::nullptr_t>)
    return stats_value{stats_null{}};
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>)
    return stats_value{static_cast<int64_t>(x)};
  else if constexpr (std::is_integral_v<U>)
    return stats_value{static_cast<uint64_t>(x)};
  else if constexpr (std::is_floating_point_v<U>)
    return stats_value{static_cast<double>(x)};
  else if constexpr (std::is_same_v<U, stats_histogram> ||
                     std::is_same_v<U, stats_json>)
    return stats_value{std::forward<T>(x)};
  else
    return stats_value{std::string{std::forward<T>(x)}};
}

struct actor_stats;

/// Adds entries under one group of an actor_stats.
class stats_group {
public:
  stats_group(actor_stats& owner, std::string group)
      : owner_(owner), group_(std::move(group)) {}

  template <class T>
  stats_group& counter(std::string name, T&& v);
  template <class T>
  stats_group& gauge(std::string name, T&& v);
  template <class T>
  stats_group& fact(std::string name, T&& v);
  stats_group& histogram(std::string name, stats_histogram h);

  /// A group nested in this one.
  stats_group group(const std::string& name) const {
    return {owner_, group_.empty() ? name : group_ + "/" + name};
  }

private:
  actor_stats& owner_;
  std::string group_;
};

/// One actor's answer to `atom::stats`.
struct actor_stats {
  /// supervisor, agents, agent, session, metadata, rpc, tracker; empty
  /// for a child that did not answer (see unresponsive_stats).
  std::string kind;
  /// The actor's ids; empty when it has none.
  std::string agent_id;
  std::string session_id;
  /// In the order system.dump writes them.
  std::vector<stats_entry> entries;
  /// True for supervisors: system.dump then writes `children`, even
  /// when empty.
  bool supervises = false;
  /// A supervisor's children, in the order they answered.
  std::vector<actor_stats> children;

  /// Appends an entry.
  actor_stats& add(std::string group, std::string name, stats_kind type,
                   stats_value value) {
    entries.push_back(
        {std::move(group), std::move(name), type, std::move(value)});
    return *this;
  }

  /// Adds entries at the top level.
  stats_group top() { return {*this, ""}; }

  /// Adds entries under `name` (created in the dump at first use).
  stats_group group(std::string name) { return {*this, std::move(name)}; }

  /// The entry `name` of `group`, or nullptr.
  const stats_entry* find(std::string_view group, std::string_view name) const {
    for (const auto& e : entries)
      if (e.group == group && e.name == name)
        return &e;
    return nullptr;
  }
};

template <class T>
stats_group& stats_group::counter(std::string name, T&& v) {
  owner_.add(group_, std::move(name), stats_kind::counter,
             to_stats_value(std::forward<T>(v)));
  return *this;
}

template <class T>
stats_group& stats_group::gauge(std::string name, T&& v) {
  owner_.add(group_, std::move(name), stats_kind::gauge,
             to_stats_value(std::forward<T>(v)));
  return *this;
}

template <class T>
stats_group& stats_group::fact(std::string name, T&& v) {
  owner_.add(group_, std::move(name), stats_kind::fact,
             to_stats_value(std::forward<T>(v)));
  return *this;
}

inline stats_group& stats_group::histogram(std::string name,
                                           stats_histogram h) {
  owner_.add(group_, std::move(name), stats_kind::histogram,
             stats_value{std::move(h)});
  return *this;
}

/// A child that did not answer in time (or failed): system.dump shows
/// {state: "unresponsive", error} in its place.
inline actor_stats unresponsive_stats(std::string error) {
  actor_stats s;
  s.top().fact("state", "unresponsive").fact("error", std::move(error));
  return s;
}

/// The numeric value of an entry as a double; false when it has none.
inline bool numeric_value(const stats_value& v, double& out) {
  if (auto* i = caf::get_if<int64_t>(&v))
    out = static_cast<double>(*i);
  else if (auto* u = caf::get_if<uint64_t>(&v))
    out = static_cast<double>(*u);
  else if (auto* d = caf::get_if<double>(&v))
    out = *d;
  else
    return false;
  return true;
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stats_null&) {
  return f(caf::meta::type_name("stats_null"));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stats_histogram& x) {
  return f(caf::meta::type_name("stats_histogram"), x.counts, x.sum, x.count);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stats_json& x) {
  return f(caf::meta::type_name("stats_json"), x.text);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stats_entry& x) {
  return f(caf::meta::type_name("stats_entry"), x.group, x.name, x.kind,
           x.value);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, actor_stats& x) {
  return f(caf::meta::type_name("actor_stats"), x.kind, x.agent_id,
           x.session_id, x.entries, x.supervises, x.children);
}

} // namespace allox
