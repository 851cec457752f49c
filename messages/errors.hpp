// SPDX-License-Identifier: Apache-2.0
// Error values shared by every layer of the daemon.
//
// An `allox::errc` travels as a `caf::error` between actors and as the
// `code` field on the wire. The numeric values are stable: they are part of
// the RPC contract (docs/rpc.md) and must never be renumbered.
#pragma once

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace allox {

enum class errc : uint8_t {
  /// A parameter is missing, has the wrong type or violates a rule.
  invalid_argument = 1,
  /// The named agent, session, checkpoint or run does not exist.
  not_found = 2,
  /// The named object exists already.
  already_exists = 3,
  /// The object is busy (mutation, lease, run) or fenced.
  conflict = 4,
  /// The bearer token is missing or wrong.
  unauthorized = 5,
  /// The request body is empty or larger than the limit.
  payload_too_large = 6,
  /// Anything the caller cannot fix; details go to the log only.
  internal = 7,
  /// The feature is not available on this daemon or kernel.
  unsupported = 8,
  /// A policy refuses the caller (share.*: a side has not opted in, or the
  /// target is read-only).
  forbidden = 9,
  /// The store is full (ENOSPC, EDQUOT): nothing was written.
  no_space = 10,
};

/// Stable machine-readable name of a code, as sent in the `code` field.
std::string_view code_name(errc code);

/// HTTP status for a code; the classes follow the prototype (400/401/500).
int http_status(errc code);

/// Builds a caf::error carrying a human-readable message.
caf::error make_error(errc code, std::string message);

/// An `internal` error for a failed system call: "<what>: <strerror(errno)>".
/// Call it right after the failing call, before errno changes.
caf::error sys_error(const std::string& what);

/// The code of an error; errors from other categories map to `internal`.
errc code_of(const caf::error& err);

/// A request that never reached its receiver: bounced from the mailbox of
/// an actor that ended (deleted, or failed and restarted) before it got
/// there, so it is safe to send it again to a successor.
bool receiver_down(const caf::error& err);

/// The human-readable message of an error made by make_error, or a generic
/// text for errors that did not come from us.
std::string message_of(const caf::error& err);

std::string to_string(errc code);

template <class T>
using expected = caf::expected<T>;

} // namespace allox

CAF_ERROR_CODE_ENUM(allox::errc, "allox")
