// SPDX-License-Identifier: Apache-2.0
// gzip for /files (zlib): uploads sent with Content-Encoding: gzip are
// inflated, within the upload limit, and downloads asked for with
// Accept-Encoding: gzip are deflated read by read. Pure.
#pragma once

#include "messages/errors.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace allox::e2b {

/// The bytes of a gzip member (or several, as gzip concatenates them);
/// invalid_argument when it is not gzip or is cut short,
/// payload_too_large when it inflates beyond `limit` bytes.
expected<std::string> gunzip(std::string_view in, size_t limit);

/// A gzip stream written piece by piece: each call returns the compressed
/// bytes ready so far; the last one ends the member.
class gzip_writer {
public:
  gzip_writer();
  ~gzip_writer();
  gzip_writer(const gzip_writer&) = delete;
  gzip_writer& operator=(const gzip_writer&) = delete;

  std::string write(std::string_view data, bool last);

private:
  struct state;
  std::unique_ptr<state> s_;
};

/// Whether an Accept-Encoding value lets the answer be gzip (a `gzip`
/// token not given q=0).
bool accepts_gzip(std::string_view accept_encoding);

} // namespace allox::e2b
