// SPDX-License-Identifier: Apache-2.0
// multipart/form-data bodies (RFC 7578) read as they stream in, as E2B's
// SDK sends files: one part per file, its destination in `filename`. A
// part's bytes are handed on as they come, so a body of any size passes
// through a buffer of about one read. Pure.
#pragma once

#include "guest/os/workspace_transfer.hpp"
#include "messages/errors.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace allox::http {

/// A part's headers.
struct form_part {
  std::string name;
  std::string filename;
  std::string content_type;
};

/// The boundary of a Content-Type "multipart/form-data; boundary=..."
/// (quoted or not); an error for any other type.
expected<std::string> form_boundary(std::string_view content_type);

/// Reads the parts of a body pulled from `in`: next() for a part's
/// headers, then pull() for its bytes until false, then next() again.
/// Errors name what is malformed (invalid_argument) or come from `in`.
class form_reader {
public:
  form_reader(os::pull_fn in, std::string boundary);

  /// The next part's headers; nullopt after the closing delimiter. The
  /// rest of the current part, if any, is skipped.
  expected<std::optional<form_part>> next();

  /// As os::pull_fn, the current part's bytes: some (valid until the next
  /// call), or false at its end.
  expected<bool> pull(std::string_view& bytes);

private:
  /// Appends what `in` gives to the buffer; false at the body's end.
  expected<bool> fill();
  /// Drops the bytes before pos_.
  void compact();

  os::pull_fn in_;
  /// "\r\n--" + boundary: what ends a part's bytes.
  std::string delim_;
  std::string buf_;
  size_t pos_ = 0;
  /// Bytes at pos_ that end a part's headers, not its data (see next()).
  size_t lead_ = 0;
  bool in_done_ = false;
  bool started_ = false;
  bool in_part_ = false;
  bool finished_ = false;
};

} // namespace allox::http
