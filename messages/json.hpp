// SPDX-License-Identifier: Apache-2.0
// Boost.JSON types as actor message elements.
//
// JSON values only travel between actors of one process (the daemon has no
// remote actors), so CAF never needs to serialize them; whitelisting is the
// documented way to allow such types. Only json::value travels: CAF's
// stringifier mistakes json::object for a std::map.
#pragma once

#include <boost/json.hpp>
#include <caf/allowed_unsafe_message_type.hpp>

#include <caf/expected.hpp>

namespace allox {

namespace json = boost::json;

/// Wraps a JSON value as a handler's reply. Return this instead of a bare
/// json::value from handlers declared `caf::result<json::value>`: that
/// constructor brace-initializes its value, and `json::value{v}` is a
/// one-element array (Boost.JSON's initializer-list constructor).
inline caf::expected<json::value> json_reply(json::value v) {
  return caf::expected<json::value>{std::move(v)};
}

} // namespace allox

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(boost::json::value)
