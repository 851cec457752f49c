// SPDX-License-Identifier: Apache-2.0
// What the native wire's encoders of messages/results/ share. Internal.
#pragma once

#include "messages/json.hpp"

#include <caf/optional.hpp>

#include <string>
#include <vector>

namespace allox::results_detail {

/// The value, or JSON null when absent.
template <class T>
json::value opt(const caf::optional<T>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

/// A JSON array of strings.
inline json::array strings(const std::vector<std::string>& xs) {
  json::array out;
  out.reserve(xs.size());
  for (const auto& x : xs)
    out.emplace_back(x);
  return out;
}

} // namespace allox::results_detail
