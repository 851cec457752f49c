// SPDX-License-Identifier: Apache-2.0
// multipart/form-data bodies (RFC 7578) as E2B's SDK sends files: one part
// per file, each named `file` with its destination in `filename`. Pure:
// parts are views into the body.
#pragma once

#include "messages/errors.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace allox::e2b {

struct form_part {
  std::string name;
  std::string filename;
  std::string content_type;
  std::string_view data;
};

/// The boundary of a Content-Type "multipart/form-data; boundary=..."
/// (quoted or not); an error for any other type.
expected<std::string> form_boundary(std::string_view content_type);

/// The parts of `body`; an error names what is malformed.
expected<std::vector<form_part>> parse_form(std::string_view body,
                                            std::string_view boundary);

} // namespace allox::e2b
