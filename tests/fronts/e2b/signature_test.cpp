// SPDX-License-Identifier: Apache-2.0
// Signed /files URLs: the signature the SDK computes (the expected values
// are node's crypto over the same strings), its expiry and its scope.
#include "fronts/e2b/signature.hpp"

#include <doctest/doctest.h>

using namespace allox;
using namespace allox::e2b;

TEST_CASE("e2b signature: as the SDK signs, with and without expiration") {
  CHECK(file_signature("/home/user/a.txt", "read", "", "tok", caf::none) ==
        "v1_Zkbb3914oLJLvMBzCAHQhm2ydBLxbSx2eQUR/kLdvIY");
  CHECK(file_signature("/home/user/a.txt", "write", "user", "tok",
                       int64_t{1700000000}) ==
        "v1_x09R0+VxB2mRzkxWcRyFCpiJmFv0okUrtgQ6q12G0jM");
}

TEST_CASE("e2b signature: one path, one operation, one token, until its "
          "expiration") {
  signed_file f{
      "/home/user/a.txt", "write", "user",
      file_signature("/home/user/a.txt", "write", "user", "tok", int64_t{1000}),
      "1000"};
  CHECK_FALSE(check_file_signature(f, "tok", 999));
  CHECK_FALSE(check_file_signature(f, "tok", 1000));
  auto late = check_file_signature(f, "tok", 1001);
  REQUIRE(late);
  CHECK(code_of(late) == errc::unauthorized);
  CHECK(message_of(late) == "the signed URL has expired");
  CHECK(check_file_signature(f, "other", 999));
  auto other = f;
  other.operation = "read";
  CHECK(check_file_signature(other, "tok", 999));
  other = f;
  other.path = "/home/user/b.txt";
  CHECK(check_file_signature(other, "tok", 999));
  other = f;
  other.expiration = "2000"; // extended by hand: no longer signed
  CHECK(check_file_signature(other, "tok", 999));
  other.expiration = "soon";
  CHECK(message_of(check_file_signature(other, "tok", 999)) ==
        "signature_expiration is not a number of seconds");
}
