// SPDX-License-Identifier: Apache-2.0
#include "messages/share.hpp"

#include <array>
#include <cstdint>

namespace allox {

share_policy parse_share_policy(const caf::optional<std::string>& text) {
  share_policy p;
  if (!text)
    return p;
  boost::system::error_code ec;
  auto doc = json::parse(*text, ec);
  if (ec || !doc.is_object())
    return p;
  const auto& o = doc.as_object();
  if (auto* v = o.if_contains("enabled"); v && v->is_bool())
    p.enabled = v->get_bool();
  if (auto* v = o.if_contains("scope");
      v && v->is_string() && split_share_path(v->get_string()))
    p.scope = std::string{v->get_string()};
  if (auto* v = o.if_contains("permission");
      v && v->is_string() &&
      (v->get_string() == "read" || v->get_string() == "write"))
    p.permission = std::string{v->get_string()};
  return p;
}

std::string serialize_share_policy(const share_policy& p) {
  return json::serialize(json::object{{"enabled", p.enabled},
                                      {"scope", p.scope},
                                      {"permission", p.permission}});
}

json::object to_json(const share_view& v) {
  return json::object{{"agent_id", v.agent_id},
                      {"session_id", v.session_id},
                      {"enabled", v.policy.enabled},
                      {"scope", v.policy.scope},
                      {"permission", v.policy.permission}};
}

const char* name_of(share_op op) {
  switch (op) {
  case share_op::list:
    return "list";
  case share_op::read:
    return "read";
  case share_op::write:
    return "write";
  }
  return "?";
}

json::object to_json(const share_listing& r) {
  json::array entries;
  for (const auto& e : r.entries) {
    const char* type = e.type == share_entry::kind::directory ? "directory"
                       : e.type == share_entry::kind::file    ? "file"
                                                              : "unsupported";
    entries.push_back(
        json::object{{"name", e.name}, {"type", type}, {"size", e.size}});
  }
  return json::object{{"entries", std::move(entries)}};
}

json::object to_json(const share_content& r) {
  return json::object{{"data_base64", encode_base64(r.data)},
                      {"size", static_cast<int64_t>(r.data.size())}};
}

json::object to_json(const share_written& r) {
  return json::object{{"written", r.written}};
}

expected<std::vector<std::string>> split_share_path(std::string_view path) {
  if (path.empty() || path.size() > 4096 ||
      path.find('\0') != std::string_view::npos ||
      path.find('\\') != std::string_view::npos)
    return make_error(errc::invalid_argument,
                      "path must be a relative POSIX path");
  std::vector<std::string> parts;
  if (path == ".")
    return parts;
  size_t i = 0;
  while (i <= path.size()) {
    auto j = path.find('/', i);
    if (j == std::string_view::npos)
      j = path.size();
    auto part = path.substr(i, j - i);
    // A leading '/' makes an empty first component, "a//b" and "a/" an
    // empty later one.
    if (part.empty() || part == "." || part == "..")
      return make_error(errc::invalid_argument,
                        "absolute paths and dot components are not allowed");
    parts.emplace_back(part);
    i = j + 1;
  }
  return parts;
}

namespace {

constexpr char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The 6-bit value of each character, 64 for characters outside the
/// alphabet.
constexpr std::array<uint8_t, 256> decoding_table() {
  std::array<uint8_t, 256> t{};
  for (auto& v : t)
    v = 64;
  for (uint8_t i = 0; i < 64; ++i)
    t[static_cast<unsigned char>(alphabet[i])] = i;
  return t;
}

constexpr auto decoding = decoding_table();

} // namespace

bool decode_base64_strict(std::string_view text, std::string& out) {
  out.clear();
  if (text.size() % 4 != 0)
    return false;
  size_t pad = 0;
  while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=')
    ++pad;
  auto body = text.substr(0, text.size() - pad);
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : body) {
    auto v = decoding[static_cast<unsigned char>(ch)];
    if (v == 64)
      return false; // outside the alphabet, or '=' before the end
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  // "x===" style: a quantum needs at least two characters.
  return body.size() % 4 != 1;
}

expected<std::string> decode_share_data(std::string_view base64) {
  auto too_large = [] {
    return make_error(errc::payload_too_large,
                      "write requires base64 data up to 256 KiB");
  };
  if (base64.size() > share_max_base64)
    return too_large();
  std::string data;
  if (!decode_base64_strict(base64, data))
    return make_error(errc::invalid_argument, "invalid base64 data");
  if (data.size() > share_max_file)
    return too_large();
  return data;
}

std::string encode_base64(std::string_view data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    uint32_t n = (static_cast<unsigned char>(data[i]) << 16) |
                 (static_cast<unsigned char>(data[i + 1]) << 8) |
                 static_cast<unsigned char>(data[i + 2]);
    out.push_back(alphabet[(n >> 18) & 63]);
    out.push_back(alphabet[(n >> 12) & 63]);
    out.push_back(alphabet[(n >> 6) & 63]);
    out.push_back(alphabet[n & 63]);
  }
  if (auto rest = data.size() - i; rest > 0) {
    uint32_t n = static_cast<unsigned char>(data[i]) << 16;
    if (rest == 2)
      n |= static_cast<unsigned char>(data[i + 1]) << 8;
    out.push_back(alphabet[(n >> 18) & 63]);
    out.push_back(alphabet[(n >> 12) & 63]);
    out.push_back(rest == 2 ? alphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

} // namespace allox
