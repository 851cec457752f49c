// SPDX-License-Identifier: Apache-2.0
// system.dump's JSON of the actor tree, rendered from the typed stats
// every actor reports (messages/stats.hpp). Keys come in the order the
// actor added its entries: the native wire's key order is pinned by
// tests/integration/golden/wire/system.dump.txt.
#pragma once

#include "messages/json.hpp"
#include "messages/stats.hpp"

namespace allox {

/// One value as JSON (a stats_json is parsed back; histograms are
/// {counts, sum, count}).
json::value to_json(const stats_value& v);

/// One actor and, for supervisors, its children: kind, ids, the entries
/// (grouped ones under their group's object, created at first use), then
/// `children`.
json::object to_json(const actor_stats& s);

/// Entries for every member of a JSON object under `group`, for values
/// reported as JSON by code that has no typed stats of its own (a
/// session's network status): strings, flags and null as facts, numbers
/// as gauges, objects as nested groups, arrays as stats_json facts.
void add_json_entries(stats_group group, const json::object& o);

} // namespace allox
