// SPDX-License-Identifier: Apache-2.0
#include "fronts/native/envelope.hpp"

namespace allox::native {

expected<envelope> decode_envelope(std::string_view body) {
  boost::system::error_code ec;
  auto doc = json::parse(body, ec);
  if (ec)
    return make_error(errc::invalid_argument,
                      "invalid JSON body: " + ec.message());
  auto* obj = doc.if_object();
  const auto* action = obj ? obj->if_contains("action") : nullptr;
  const auto* params = obj ? obj->if_contains("params") : nullptr;
  if (action == nullptr || !action->is_string() ||
      (params != nullptr && !params->is_object() && !params->is_null()))
    return make_error(errc::invalid_argument,
                      "request requires string action and object params");
  envelope out;
  out.action = std::string{action->get_string()};
  if (params != nullptr && params->is_object())
    out.params = std::move(obj->at("params").as_object());
  return out;
}

} // namespace allox::native
