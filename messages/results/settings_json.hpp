// SPDX-License-Identifier: Apache-2.0
// A session's own settings as the catalog keeps them ({network?, egress?
// {allow, deny}, limits? {file: value}, max_runs?}), and session.configure's
// native JSON ({network, egress, limits, max_runs, agent_id, session_id}),
// written here once.
#pragma once

#include "messages/json.hpp"
#include "messages/results/settings.hpp"

#include <caf/optional.hpp>

#include <string>

namespace allox {

/// The catalog text; none or unreadable text (or an unreadable field) is
/// the defaults, field by field.
own_settings parse_own_settings(const caf::optional<std::string>& text);

/// The catalog text, or none when nothing is the session's own.
caf::optional<std::string> serialize_own_settings(const own_settings& own);

/// {file: value, ...}.
json::object to_json(const limit_list& limits);

/// The catalog's object (also the session.configure audit's `settings`).
json::object to_json(const own_settings& own);

json::object to_json(const settings_view& v);

} // namespace allox
