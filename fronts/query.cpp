// SPDX-License-Identifier: Apache-2.0
#include "fronts/query.hpp"

namespace allox::fronts {

bool percent_decode(std::string_view in, std::string& out, bool plus_space) {
  out.clear();
  out.reserve(in.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+' && plus_space) {
      out.push_back(' ');
    } else if (c == '%') {
      if (i + 2 >= in.size())
        return false;
      int hi = hex(in[i + 1]);
      int lo = hex(in[i + 2]);
      if (hi < 0 || lo < 0)
        return false;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return true;
}

std::string query_param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    auto amp = query.find('&');
    auto part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{}
                                          : query.substr(amp + 1);
    auto eq = part.find('=');
    std::string key;
    if (!percent_decode(part.substr(0, eq), key, true) || key != name)
      continue;
    std::string value;
    if (eq != std::string_view::npos &&
        percent_decode(part.substr(eq + 1), value, true))
      return value;
    return {};
  }
  return {};
}

} // namespace allox::fronts
