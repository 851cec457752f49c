// SPDX-License-Identifier: Apache-2.0
// Run output is bytes; JSON carries text. These keep output JSON-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace allox {

/// `in` with every byte that is not part of a valid UTF-8 sequence
/// replaced by U+FFFD.
std::string valid_utf8(std::string_view in);

/// The length of the longest prefix of `in` that does not end inside a
/// multi-byte sequence, so a chunk of a stream never splits a character
/// (at most 3 bytes are held back).
size_t whole_utf8_prefix(std::string_view in);

} // namespace allox
