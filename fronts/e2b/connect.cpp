// SPDX-License-Identifier: Apache-2.0
#include "fronts/e2b/connect.hpp"

#include <cctype>

namespace allox::connect {

std::string_view name(code c) {
  switch (c) {
  case code::canceled:
    return "canceled";
  case code::unknown:
    return "unknown";
  case code::invalid_argument:
    return "invalid_argument";
  case code::deadline_exceeded:
    return "deadline_exceeded";
  case code::not_found:
    return "not_found";
  case code::already_exists:
    return "already_exists";
  case code::permission_denied:
    return "permission_denied";
  case code::resource_exhausted:
    return "resource_exhausted";
  case code::failed_precondition:
    return "failed_precondition";
  case code::aborted:
    return "aborted";
  case code::out_of_range:
    return "out_of_range";
  case code::unimplemented:
    return "unimplemented";
  case code::internal:
    return "internal";
  case code::unavailable:
    return "unavailable";
  case code::data_loss:
    return "data_loss";
  case code::unauthenticated:
    return "unauthenticated";
  }
  return "unknown";
}

int http_status(code c) {
  switch (c) {
  case code::canceled:
    return 499;
  case code::invalid_argument:
  case code::failed_precondition:
  case code::out_of_range:
    return 400;
  case code::deadline_exceeded:
    return 504;
  case code::not_found:
    return 404;
  case code::already_exists:
  case code::aborted:
    return 409;
  case code::permission_denied:
    return 403;
  case code::resource_exhausted:
    return 429;
  case code::unimplemented:
    return 501;
  case code::unavailable:
    return 503;
  case code::unauthenticated:
    return 401;
  case code::unknown:
  case code::internal:
  case code::data_loss:
    return 500;
  }
  return 500;
}

code code_for(errc e) {
  switch (e) {
  case errc::invalid_argument:
    return code::invalid_argument;
  case errc::not_found:
    return code::not_found;
  case errc::already_exists:
    return code::already_exists;
  case errc::conflict:
    return code::failed_precondition;
  case errc::unauthorized:
    return code::unauthenticated;
  case errc::payload_too_large:
  case errc::no_space:
    return code::resource_exhausted;
  case errc::unsupported:
    return code::unimplemented;
  case errc::forbidden:
    return code::permission_denied;
  case errc::internal:
    return code::internal;
  }
  return code::internal;
}

error from(const caf::error& err) {
  return {code_for(code_of(err)), message_of(err)};
}

json::object to_json(const error& e) {
  return {{"code", name(e.code)}, {"message", e.message}};
}

std::string envelope(std::string_view payload, uint8_t flags) {
  std::string out;
  out.reserve(5 + payload.size());
  auto n = static_cast<uint32_t>(payload.size());
  out.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((n >> shift) & 0xff));
  out.append(payload);
  return out;
}

std::string end_stream(const caf::optional<error>& e) {
  json::object body;
  if (e)
    body["error"] = to_json(*e);
  return envelope(json::serialize(body), flag_end_stream);
}

expected<std::string> single_message(std::string_view body) {
  auto bad = [](std::string what) {
    return make_error(errc::invalid_argument,
                      "malformed Connect envelope: " + what);
  };
  if (body.size() < 5)
    return bad("shorter than its 5-byte prefix");
  auto flags = static_cast<uint8_t>(body[0]);
  uint32_t n = 0;
  for (int i = 1; i < 5; ++i)
    n = (n << 8) | static_cast<uint8_t>(body[i]);
  if ((flags & flag_compressed) != 0)
    return bad("compressed messages are not accepted (no encoding agreed)");
  if (flags != 0)
    return bad("unexpected flags " + std::to_string(flags));
  if (body.size() - 5 < n)
    return bad("cut off: " + std::to_string(body.size() - 5) + " of " +
               std::to_string(n) + " bytes");
  if (body.size() - 5 > n)
    return bad("more than one message in a server-streaming request");
  return std::string{body.substr(5)};
}

caf::optional<std::chrono::milliseconds> parse_timeout(std::string_view text) {
  if (text.empty() || text.size() > 10)
    return caf::none;
  int64_t ms = 0;
  for (char ch : text) {
    if (!std::isdigit(static_cast<unsigned char>(ch)))
      return caf::none;
    ms = ms * 10 + (ch - '0');
  }
  if (ms <= 0)
    return caf::none;
  return std::chrono::milliseconds{ms};
}

} // namespace allox::connect
