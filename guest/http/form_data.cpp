// SPDX-License-Identifier: Apache-2.0
#include "guest/http/form_data.hpp"

#include <algorithm>
#include <cctype>

namespace allox::http {

namespace {

/// The most bytes of headers one part may have.
constexpr size_t max_part_head = 16 << 10;

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

form_reader::form_reader(os::pull_fn in, std::string boundary)
    : in_(std::move(in)), delim_("\r\n--" + std::move(boundary)) {}

expected<bool> form_reader::fill() {
  if (in_done_)
    return false;
  std::string_view chunk;
  auto more = in_(chunk);
  if (!more)
    return more.error();
  if (!*more) {
    in_done_ = true;
    return false;
  }
  buf_.append(chunk);
  return true;
}

void form_reader::compact() {
  buf_.erase(0, pos_);
  pos_ = 0;
}

expected<bool> form_reader::pull(std::string_view& bytes) {
  if (!in_part_)
    return false;
  compact();
  for (;;) {
    auto at = buf_.find(delim_, pos_);
    if (at == pos_) {
      in_part_ = false;
      lead_ = 0;
      pos_ += delim_.size();
      return false;
    }
    if (lead_ > 0) {
      // Not an empty part once a delimiter's worth follows: the blank
      // line's CRLF is not the part's.
      if (at != std::string::npos || buf_.size() - pos_ >= delim_.size()) {
        pos_ += lead_;
        lead_ = 0;
        continue;
      }
    } else if (at != std::string::npos) {
      // The delimiter stays: the next call ends the part.
      bytes = std::string_view{buf_}.substr(pos_, at - pos_);
      pos_ = at;
      return true;
    } else if (auto keep = delim_.size() - 1; buf_.size() - pos_ > keep) {
      // All but what could be the start of a delimiter is the part's.
      auto n = buf_.size() - pos_ - keep;
      bytes = std::string_view{buf_}.substr(pos_, n);
      pos_ += n;
      return true;
    }
    auto more = fill();
    if (!more)
      return more.error();
    if (!*more)
      return malformed("a part is cut off before its boundary");
  }
}

expected<std::optional<form_part>> form_reader::next() {
  if (finished_)
    return std::optional<form_part>{};
  std::string_view skipped;
  while (in_part_) {
    auto more = pull(skipped);
    if (!more)
      return more.error();
  }
  compact();
  if (!started_) {
    // The first delimiter has no CRLF before it (a preamble may); the
    // preamble is bounded, and searched once.
    auto first = std::string_view{delim_}.substr(2);
    size_t from = 0;
    for (;;) {
      auto at = buf_.find(first, from);
      if (at != std::string::npos &&
          (at == 0 || (at >= 2 && buf_.compare(at - 2, 2, "\r\n") == 0))) {
        pos_ = at + first.size();
        break;
      }
      if (at != std::string::npos) {
        from = at + 1;
        continue;
      }
      if (buf_.size() > max_part_head)
        return malformed("no boundary line in the first " +
                         std::to_string(max_part_head) + " bytes");
      from = buf_.size() < delim_.size() ? 0 : buf_.size() - delim_.size();
      auto more = fill();
      if (!more)
        return more.error();
      if (!*more)
        return malformed("no boundary line");
    }
    started_ = true;
  }
  while (buf_.size() - pos_ < 2) {
    auto more = fill();
    if (!more)
      return more.error();
    if (!*more)
      return malformed("the body ends without its closing boundary");
  }
  if (buf_.compare(pos_, 2, "--") == 0) {
    // The closing delimiter: the epilogue is read and dropped, so the body
    // ends where its length says (its bytes are never a next request).
    finished_ = true;
    buf_.clear();
    pos_ = 0;
    for (;;) {
      auto more = fill();
      if (!more)
        return more.error();
      if (!*more)
        break;
      buf_.clear();
    }
    return std::optional<form_part>{};
  }
  if (buf_.compare(pos_, 2, "\r\n") != 0)
    return malformed("a boundary line does not end with CRLF");
  pos_ += 2;
  // From the boundary line's CRLF: a part without headers has its blank
  // line right after it.
  size_t head_end;
  while ((head_end = buf_.find("\r\n\r\n", pos_ - 2)) == std::string::npos) {
    if (buf_.size() - pos_ > max_part_head)
      return malformed("a part's headers are larger than " +
                       std::to_string(max_part_head) + " bytes");
    auto more = fill();
    if (!more)
      return more.error();
    if (!*more)
      return malformed("a part's headers do not end");
  }
  form_part part;
  auto heads = head_end < pos_
                   ? std::string_view{}
                   : std::string_view{buf_}.substr(pos_, head_end - pos_);
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
  // The part's bytes start after the blank line; a delimiter straight
  // after it (an empty part) starts with that line's CRLF, so pull()
  // searches from there and skips it once the part has bytes.
  pos_ = head_end + 2;
  lead_ = 2;
  in_part_ = true;
  return std::optional<form_part>{std::move(part)};
}

} // namespace allox::http
