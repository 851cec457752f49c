// SPDX-License-Identifier: Apache-2.0
#include "fronts/mcp/jsonrpc.hpp"

#include <algorithm>

namespace allox::mcp {

namespace {

message failed(json::value id, int c, std::string text) {
  message m;
  m.id = std::move(id);
  m.failed = true;
  m.error = {c, std::move(text)};
  return m;
}

} // namespace

message decode(const json::value& v) {
  if (!v.is_object())
    return failed(nullptr, code::invalid_request,
                  "a JSON-RPC message must be an object");
  const auto& o = v.as_object();
  json::value id = nullptr;
  bool has_id = false;
  if (auto* i = o.if_contains("id")) {
    if (!i->is_string() && !i->is_int64() && !i->is_uint64())
      return failed(nullptr, code::invalid_request,
                    "id must be a string or an integer");
    id = *i;
    has_id = true;
  }
  auto* version = o.if_contains("jsonrpc");
  if (version == nullptr || !version->is_string() ||
      version->as_string() != "2.0")
    return failed(id, code::invalid_request, "jsonrpc must be \"2.0\"");
  auto* method = o.if_contains("method");
  if (method == nullptr) {
    // A client's answer to a request of ours; we send none, so it is
    // accepted and dropped.
    if (has_id && (o.contains("result") || o.contains("error"))) {
      message m;
      m.id = std::move(id);
      m.response = true;
      return m;
    }
    return failed(id, code::invalid_request, "method is required");
  }
  if (!method->is_string() || method->as_string().empty())
    return failed(id, code::invalid_request, "method must be a string");
  message m;
  m.id = std::move(id);
  m.request = has_id;
  m.method = std::string{method->as_string()};
  if (auto* p = o.if_contains("params"); p != nullptr && !p->is_null()) {
    if (!p->is_object())
      return failed(m.id, code::invalid_params, "params must be an object");
    m.params = p->as_object();
  }
  return m;
}

std::vector<message> decode_body(std::string_view body, bool& batch) {
  batch = false;
  boost::system::error_code ec;
  auto doc = json::parse(json::string_view{body.data(), body.size()}, ec);
  if (ec)
    return {failed(nullptr, code::parse_error,
                   "the body is not JSON: " + ec.message())};
  if (!doc.is_array())
    return {decode(doc)};
  batch = true;
  const auto& items = doc.as_array();
  if (items.empty())
    return {failed(nullptr, code::invalid_request, "an empty batch")};
  std::vector<message> out;
  out.reserve(items.size());
  for (const auto& item : items)
    out.push_back(decode(item));
  return out;
}

json::object success(const json::value& id, json::value value) {
  return json::object{
      {"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(value)}};
}

json::object error(const json::value& id, const rpc_error& e) {
  return json::object{
      {"jsonrpc", "2.0"},
      {"id", id},
      {"error", json::object{{"code", e.code}, {"message", e.message}}}};
}

json::object notification(std::string_view method, json::object params) {
  return json::object{
      {"jsonrpc", "2.0"},
      {"method", json::string_view{method.data(), method.size()}},
      {"params", std::move(params)}};
}

const std::vector<std::string_view>& protocol_versions() {
  static const std::vector<std::string_view> all{"2025-11-25", "2025-06-18",
                                                 "2025-03-26"};
  return all;
}

bool supported(std::string_view v) {
  const auto& all = protocol_versions();
  return std::find(all.begin(), all.end(), v) != all.end();
}

std::string negotiate(std::string_view asked) {
  return std::string{supported(asked) ? asked : protocol_versions().front()};
}

} // namespace allox::mcp
