// SPDX-License-Identifier: Apache-2.0
// gzip as a content coding of streamed bodies (zlib): an upload sent with
// Content-Encoding: gzip is inflated as it is read, within the upload
// limit, and a download asked for with Accept-Encoding: gzip is deflated
// read by read. Pure: bytes come from, and go to, callers' functions.
#pragma once

#include "guest/os/workspace_transfer.hpp"
#include "messages/errors.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace allox::http {

/// The inflated bytes of a gzip body pulled from `in`, pulled in turn (a
/// pull_fn over another): gzip members concatenated are one stream of
/// their contents. invalid_argument when the body is not gzip or is cut
/// short; payload_too_large once it inflates beyond `limit` bytes.
class gunzip_source {
public:
  gunzip_source(os::pull_fn in, uint64_t limit);
  ~gunzip_source();
  gunzip_source(const gunzip_source&) = delete;
  gunzip_source& operator=(const gunzip_source&) = delete;

  /// As os::pull_fn: some bytes (valid until the next call), or false at
  /// the end of the body.
  expected<bool> pull(std::string_view& bytes);

private:
  struct state;
  std::unique_ptr<state> s_;
};

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

/// Whether deflating a file of `size` bytes open at `fd` pays: small files
/// always, larger ones when a sample of their start shrinks by a tenth.
/// Accept-Encoding allows gzip, it does not ask for it (Node's fetch
/// sends it on every request): compressed or random data deflated on the
/// fly would cap a download at zlib's pace for no byte saved.
bool worth_gzip(int fd, uint64_t size);

} // namespace allox::http
