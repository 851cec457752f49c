// SPDX-License-Identifier: Apache-2.0
// The Connect protocol (connectrpc.com) as envd's clients speak it over
// HTTP/1.1 with the JSON codec: unary calls are a JSON body each way with
// errors as {code, message} under an HTTP status; server streams are
// envelopes (one flag byte, a 4-byte big-endian length, the message) and
// end with an end-stream envelope (flag 0x02) carrying {} or {error}.
// Pure functions, no I/O: the E2B front frames with them.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <caf/optional.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace allox::connect {

/// The Connect (and gRPC) status codes, by their wire numbers.
enum class code : uint8_t {
  canceled = 1,
  unknown = 2,
  invalid_argument = 3,
  deadline_exceeded = 4,
  not_found = 5,
  already_exists = 6,
  permission_denied = 7,
  resource_exhausted = 8,
  failed_precondition = 9,
  aborted = 10,
  out_of_range = 11,
  unimplemented = 12,
  internal = 13,
  unavailable = 14,
  data_loss = 15,
  unauthenticated = 16,
};

/// The code's wire name ("not_found").
std::string_view name(code c);

/// The HTTP status a unary error is sent with (the protocol's table).
int http_status(code c);

/// The Connect code for one of our errors.
code code_for(errc e);

/// A Connect error: what a handler answers instead of a message.
struct error {
  connect::code code = code::unknown;
  std::string message;
};

/// The error a failed call of our core answers with.
error from(const caf::error& err);

/// {"code": ..., "message": ...}: a unary error's body and the `error`
/// member of an end-stream envelope.
json::object to_json(const error& e);

/// Envelope flags.
inline constexpr uint8_t flag_compressed = 0x01;
inline constexpr uint8_t flag_end_stream = 0x02;

/// The 5-byte prefix and the payload.
std::string envelope(std::string_view payload, uint8_t flags = 0);

/// The stream's last envelope: {} on success, else {"error": {...}}.
std::string end_stream(const caf::optional<error>& e = caf::none);

/// A server-streaming call's request body: exactly one uncompressed
/// message envelope; its payload, or what is wrong with the body.
expected<std::string> single_message(std::string_view body);

/// Connect-Timeout-Ms: at most 10 digits, a positive number; none when
/// the header is absent or malformed (the protocol says to ignore it then
/// only for absence; malformed is the caller's invalid_argument).
caf::optional<std::chrono::milliseconds> parse_timeout(std::string_view text);

/// The media types: unary JSON and streaming JSON.
inline constexpr std::string_view unary_json = "application/json";
inline constexpr std::string_view stream_json = "application/connect+json";

} // namespace allox::connect
