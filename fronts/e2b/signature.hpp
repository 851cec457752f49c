// SPDX-License-Identifier: Apache-2.0
// Signed /files URLs as E2B's SDK makes them (uploadUrl, downloadUrl): the
// signature is "v1_" and the unpadded base64 of SHA-256 over
// "path:operation:user:envdAccessToken[:expiration]", so a URL handed to a
// browser or another program reads or writes one path, once it is signed
// by someone holding the sandbox's token, until its expiration. Pure.
#pragma once

#include "messages/errors.hpp"

#include <caf/optional.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace allox::e2b {

/// The signature of `operation` ("read" or "write") on `path` as `user`
/// (empty when the URL names none); `expiration` in Unix seconds.
std::string file_signature(std::string_view path, std::string_view operation,
                           std::string_view user, std::string_view token,
                           caf::optional<int64_t> expiration);

/// What a signed URL carries.
struct signed_file {
  std::string path;
  std::string operation;
  std::string user;
  std::string signature;
  /// signature_expiration as given (empty: none).
  std::string expiration;
};

/// Checks `f` against the sandbox's token at `now_s`: unauthorized for a
/// signature that does not match, an expiration that is not a number, or
/// one that has passed.
caf::error check_file_signature(const signed_file& f, std::string_view token,
                                int64_t now_s);

} // namespace allox::e2b
