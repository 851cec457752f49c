// SPDX-License-Identifier: Apache-2.0
#include "messages/ids.hpp"

#include <sys/random.h>

#include <array>
#include <stdexcept>

namespace allox {

namespace {

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}

} // namespace

bool is_valid_id(std::string_view id) {
  if (id.empty() || id.size() > 64 || !is_alnum(id.front()))
    return false;
  for (char c : id.substr(1))
    if (!is_alnum(c) && c != '_' && c != '.' && c != '-')
      return false;
  return true;
}

caf::error validate_id(std::string_view kind, std::string_view id) {
  if (is_valid_id(id))
    return caf::none;
  std::string msg = "invalid ";
  msg += kind;
  msg += " id: '";
  msg += id;
  msg += "'";
  return make_error(errc::invalid_argument, std::move(msg));
}

std::string random_hex_token() {
  std::array<unsigned char, 16> bytes{};
  size_t filled = 0;
  while (filled < bytes.size()) {
    auto n = getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (n < 0)
      throw std::runtime_error("getrandom failed");
    filled += static_cast<size_t>(n);
  }
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(32);
  for (auto b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 0xf]);
  }
  return out;
}

std::string session_key(std::string_view agent_id,
                        std::string_view session_id) {
  std::string key{agent_id};
  key += '/';
  key += session_id;
  return key;
}

} // namespace allox
