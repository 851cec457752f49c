// SPDX-License-Identifier: Apache-2.0
#include "fronts/e2b/multipart.hpp"

#include <algorithm>
#include <cctype>

namespace allox::e2b {

namespace {

caf::error malformed(std::string what) {
  return make_error(errc::invalid_argument,
                    "malformed multipart body: " + std::move(what));
}

std::string lower(std::string_view s) {
  std::string out{s};
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

/// A parameter of a header value (`name="value"` or `name=value`).
std::string header_param(std::string_view value, std::string_view name) {
  size_t at = 0;
  while ((at = value.find(';', at)) != std::string_view::npos) {
    ++at;
    auto rest = trim(value.substr(at));
    auto eq = rest.find('=');
    if (eq == std::string_view::npos)
      continue;
    if (lower(trim(rest.substr(0, eq))) != name)
      continue;
    auto v = rest.substr(eq + 1);
    if (!v.empty() && v.front() == '"') {
      std::string out;
      for (size_t i = 1; i < v.size() && v[i] != '"'; ++i) {
        if (v[i] == '\\' && i + 1 < v.size())
          ++i;
        out.push_back(v[i]);
      }
      return out;
    }
    return std::string{trim(v.substr(0, v.find(';')))};
  }
  return {};
}

} // namespace

expected<std::string> form_boundary(std::string_view content_type) {
  auto type = lower(trim(content_type.substr(0, content_type.find(';'))));
  if (type != "multipart/form-data")
    return make_error(errc::invalid_argument,
                      "the body must be multipart/form-data or "
                      "application/octet-stream");
  auto b = header_param(content_type, "boundary");
  if (b.empty() || b.size() > 70)
    return malformed("no boundary of 1 to 70 characters");
  return b;
}

expected<std::vector<form_part>> parse_form(std::string_view body,
                                            std::string_view boundary) {
  std::vector<form_part> parts;
  std::string delim = "--" + std::string{boundary};
  auto at = body.find(delim);
  if (at == std::string_view::npos)
    return malformed("no boundary line");
  at += delim.size();
  std::string next = "\r\n" + delim;
  for (;;) {
    if (body.compare(at, 2, "--") == 0)
      return parts; // the closing delimiter
    if (body.compare(at, 2, "\r\n") != 0)
      return malformed("a boundary line does not end with CRLF");
    at += 2;
    auto head_end = body.find("\r\n\r\n", at);
    if (head_end == std::string_view::npos)
      return malformed("a part's headers do not end");
    form_part part;
    auto heads = body.substr(at, head_end - at);
    while (!heads.empty()) {
      auto eol = heads.find("\r\n");
      auto line = heads.substr(0, eol);
      heads = eol == std::string_view::npos ? std::string_view{}
                                            : heads.substr(eol + 2);
      auto colon = line.find(':');
      if (colon == std::string_view::npos)
        return malformed("a part header without ':'");
      auto name = lower(trim(line.substr(0, colon)));
      auto value = trim(line.substr(colon + 1));
      if (name == "content-disposition") {
        part.name = header_param(value, "name");
        part.filename = header_param(value, "filename");
      } else if (name == "content-type") {
        part.content_type = std::string{value};
      }
    }
    auto data_at = head_end + 4;
    auto end = body.find(next, data_at);
    if (end == std::string_view::npos)
      return malformed("a part is cut off before its boundary");
    part.data = body.substr(data_at, end - data_at);
    parts.push_back(std::move(part));
    at = end + next.size();
  }
}

} // namespace allox::e2b
