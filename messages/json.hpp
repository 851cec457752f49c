// SPDX-License-Identifier: Apache-2.0
// Boost.JSON types as actor message elements.
//
// Handlers answer typed results (messages/results/); JSON travels between
// actors only as a request's parameters on their way to a decoder. Only
// within one process (the daemon has no remote actors), so CAF never needs
// to serialize it; whitelisting is the documented way to allow such types.
// Only json::value travels: CAF's stringifier mistakes json::object for a
// std::map.
#pragma once

#include <boost/json.hpp>
#include <caf/allowed_unsafe_message_type.hpp>

namespace allox {

namespace json = boost::json;

} // namespace allox

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(boost::json::value)
