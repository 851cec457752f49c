// SPDX-License-Identifier: Apache-2.0
#include "messages/errors.hpp"

#include <caf/message.hpp>
#include <caf/sec.hpp>

#include <cerrno>
#include <cstring>

namespace allox {

std::string_view code_name(errc code) {
  switch (code) {
  case errc::invalid_argument:
    return "invalid_argument";
  case errc::not_found:
    return "not_found";
  case errc::already_exists:
    return "already_exists";
  case errc::conflict:
    return "conflict";
  case errc::unauthorized:
    return "unauthorized";
  case errc::payload_too_large:
    return "payload_too_large";
  case errc::internal:
    return "internal";
  case errc::unsupported:
    return "unsupported";
  case errc::forbidden:
    return "forbidden";
  case errc::no_space:
    return "no_space";
  }
  return "internal";
}

int http_status(errc code) {
  switch (code) {
  case errc::unauthorized:
    return 401;
  case errc::internal:
    return 500;
  case errc::no_space:
    return 507;
  default:
    return 400;
  }
}

caf::error make_error(errc code, std::string message) {
  return caf::make_error(code, std::move(message));
}

caf::error sys_error(const std::string& what) {
  auto code = errno == ENOSPC || errno == EDQUOT ? errc::no_space
                                                 : errc::internal;
  return make_error(code, what + ": " + std::strerror(errno));
}

errc code_of(const caf::error& err) {
  if (err.category() == caf::atom("allox") && err.code() >= 1 &&
      err.code() <= static_cast<uint8_t>(errc::no_space))
    return static_cast<errc>(err.code());
  return errc::internal;
}

bool receiver_down(const caf::error& err) {
  return err.category() == caf::atom("system") &&
         err.code() == static_cast<uint8_t>(caf::sec::request_receiver_down);
}

std::string message_of(const caf::error& err) {
  if (err.category() == caf::atom("allox")) {
    const auto& ctx = err.context();
    if (ctx.match_elements<std::string>())
      return ctx.get_as<std::string>(0);
    return std::string{code_name(code_of(err))};
  }
  if (err.category() == caf::atom("system")) {
    auto sec = static_cast<caf::sec>(err.code());
    if (sec == caf::sec::request_timeout)
      return "request timed out inside the daemon";
    if (sec == caf::sec::request_receiver_down)
      return "the owning actor failed while handling the request";
  }
  return "internal workspace daemon error";
}

std::string to_string(errc code) {
  return std::string{code_name(code)};
}

} // namespace allox
