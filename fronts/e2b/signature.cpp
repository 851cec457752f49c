// SPDX-License-Identifier: Apache-2.0
#include "fronts/e2b/signature.hpp"

#include "guest/http/server.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <charconv>

namespace allox::e2b {

std::string file_signature(std::string_view path, std::string_view operation,
                           std::string_view user, std::string_view token,
                           caf::optional<int64_t> expiration) {
  std::string raw;
  raw.append(path).append(":").append(operation).append(":");
  raw.append(user).append(":").append(token);
  if (expiration)
    raw.append(":").append(std::to_string(*expiration));
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(raw.data()), raw.size(),
         digest);
  // 32 bytes: 44 base64 characters and a NUL.
  unsigned char text[4 * ((SHA256_DIGEST_LENGTH + 2) / 3) + 1];
  auto n = EVP_EncodeBlock(text, digest, SHA256_DIGEST_LENGTH);
  std::string out = "v1_";
  out.append(reinterpret_cast<const char*>(text), static_cast<size_t>(n));
  while (!out.empty() && out.back() == '=')
    out.pop_back();
  return out;
}

caf::error check_file_signature(const signed_file& f, std::string_view token,
                                int64_t now_s) {
  caf::optional<int64_t> expiration;
  if (!f.expiration.empty()) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(
        f.expiration.data(), f.expiration.data() + f.expiration.size(), v);
    if (ec != std::errc{} || end != f.expiration.data() + f.expiration.size())
      return make_error(errc::unauthorized,
                        "signature_expiration is not a number of seconds");
    expiration = v;
  }
  auto expected =
      file_signature(f.path, f.operation, f.user, token, expiration);
  if (!http::secret_matches(f.signature, expected))
    return make_error(errc::unauthorized, "the signature does not match this " +
                                              f.operation + " of " + f.path);
  if (expiration && *expiration < now_s)
    return make_error(errc::unauthorized, "the signed URL has expired");
  return caf::none;
}

} // namespace allox::e2b
