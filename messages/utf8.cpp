// SPDX-License-Identifier: Apache-2.0
#include "messages/utf8.hpp"

namespace allox {

namespace {

/// The length of the sequence a lead byte starts; 0 for a byte that
/// cannot start one.
size_t sequence_length(unsigned char c) {
  return c < 0x80         ? 1
         : (c >> 5) == 6  ? 2
         : (c >> 4) == 14 ? 3
         : (c >> 3) == 30 ? 4
                          : 0;
}

bool continuation(unsigned char c) {
  return (c >> 6) == 2;
}

} // namespace

std::string valid_utf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    auto len = sequence_length(static_cast<unsigned char>(in[i]));
    bool ok = len > 0 && i + len <= in.size();
    for (size_t k = 1; ok && k < len; ++k)
      ok = continuation(static_cast<unsigned char>(in[i + k]));
    if (ok) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

size_t whole_utf8_prefix(std::string_view in) {
  // Look back at most 3 bytes for the lead byte of the last sequence.
  for (size_t back = 1; back <= 3 && back <= in.size(); ++back) {
    auto c = static_cast<unsigned char>(in[in.size() - back]);
    if (continuation(c))
      continue;
    auto len = sequence_length(c);
    return len > back ? in.size() - back : in.size();
  }
  return in.size();
}

} // namespace allox
