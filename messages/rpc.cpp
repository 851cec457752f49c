// SPDX-License-Identifier: Apache-2.0
#include "messages/rpc.hpp"

#include "messages/json.hpp"

namespace allox {

std::string ok_body(const std::string& result_json) {
  std::string out;
  out.reserve(result_json.size() + 24);
  out += R"({"ok":true,"result":)";
  out += result_json;
  out += '}';
  return out;
}

std::string error_body(std::string_view message, std::string_view code) {
  json::object o;
  o["ok"] = false;
  o["error"] = message;
  o["code"] = code;
  return json::serialize(o);
}

} // namespace allox
