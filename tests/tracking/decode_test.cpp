// SPDX-License-Identifier: Apache-2.0
// The decoder on crafted bytes: every malformed record is counted by
// reason and never becomes an event.
#include "tracking/decode.hpp"

#include <doctest/doctest.h>

#include <cstring>

using namespace allox;
using namespace allox::tracking;

namespace {

constexpr uint64_t known = 7;

bool is_known(uint64_t cookie) {
  return cookie == known;
}

allox_event_header header(uint16_t type, uint32_t size) {
  allox_event_header h{};
  h.abi = ALLOX_PROCESS_ABI;
  h.type = type;
  h.size = size;
  h.cookie = known;
  h.seq = 3;
  h.time_ns = 1000;
  h.flags = ALLOX_FLAG_ROOT;
  h.cpu = 1;
  h.process = {555, 42, 0};
  return h;
}

allox_fork_event fork_record() {
  allox_fork_event r{};
  r.hdr = header(ALLOX_EVENT_FORK, sizeof(r));
  r.parent = {111, 41, 0};
  r.parent_tid = 43;
  std::memcpy(r.comm, "sh", 3);
  return r;
}

} // namespace

TEST_CASE("decode: a fork record becomes a fork event") {
  auto r = fork_record();
  auto out = decode_record(&r, sizeof(r), is_known);
  REQUIRE(std::holds_alternative<process_event>(out));
  auto& e = std::get<fork_event>(std::get<process_event>(out));
  CHECK(e.hdr.cookie == known);
  CHECK(e.hdr.seq == 3);
  CHECK(e.hdr.root);
  CHECK(e.hdr.process == process_identity{555, 42});
  CHECK(e.parent == process_identity{111, 41});
  CHECK(e.parent_tid == 43);
  CHECK(e.comm == "sh");
  CHECK(e.hdr.process.str("b00t") == "b00t:555:42");
}

TEST_CASE("decode: strings without a NUL stop at their field") {
  allox_exec_event r{};
  r.hdr = header(ALLOX_EVENT_EXEC, sizeof(r));
  r.hdr.flags = ALLOX_FLAG_FILENAME_TRUNCATED;
  std::memset(r.comm, 'c', sizeof(r.comm));
  std::memset(r.filename, 'f', sizeof(r.filename));
  auto out = decode_record(&r, sizeof(r), is_known);
  REQUIRE(std::holds_alternative<process_event>(out));
  auto& e = std::get<exec_event>(std::get<process_event>(out));
  CHECK(e.comm == std::string(ALLOX_COMM_LEN, 'c'));
  CHECK(e.filename == std::string(ALLOX_FILENAME_LEN, 'f'));
  CHECK(e.filename_truncated);
  CHECK_FALSE(e.hdr.root);
}

TEST_CASE("decode: exit status decodes as exit code or signal") {
  allox_exit_event r{};
  r.hdr = header(ALLOX_EVENT_EXIT, sizeof(r));
  r.exit_code = 3 << 8;
  auto out = decode_record(&r, sizeof(r), is_known);
  auto e = std::get<exit_event>(std::get<process_event>(out));
  CHECK(e.exit_code() == 3);
  CHECK_FALSE(e.signal());
  r.exit_code = 9 | 0x80;
  e = std::get<exit_event>(
      std::get<process_event>(decode_record(&r, sizeof(r), is_known)));
  CHECK_FALSE(e.exit_code());
  CHECK(e.signal() == 9);
  CHECK(e.core_dumped());
}

TEST_CASE("decode: malformed records are counted by reason, never decoded") {
  record_decoder decoder{is_known};
  std::vector<process_event> out;
  auto good = fork_record();

  // Shorter than a header, and empty.
  CHECK_FALSE(decoder.decode(&good, sizeof(allox_event_header) - 1, out));
  CHECK_FALSE(decoder.decode(nullptr, 0, out));
  // A whole header, but shorter than a fork record.
  CHECK_FALSE(decoder.decode(&good, sizeof(allox_event_header) + 8, out));
  CHECK(decoder.errors().truncated == 3);

  auto bad_abi = good;
  bad_abi.hdr.abi = ALLOX_PROCESS_ABI + 1;
  CHECK_FALSE(decoder.decode(&bad_abi, sizeof(bad_abi), out));
  CHECK(decoder.errors().bad_abi == 1);

  auto unknown_type = good;
  unknown_type.hdr.type = 99;
  CHECK_FALSE(decoder.decode(&unknown_type, sizeof(unknown_type), out));
  auto zero_type = good;
  zero_type.hdr.type = 0;
  CHECK_FALSE(decoder.decode(&zero_type, sizeof(zero_type), out));
  CHECK(decoder.errors().unknown_type == 2);

  auto lying = good;
  lying.hdr.size = sizeof(allox_exec_event);
  CHECK_FALSE(decoder.decode(&lying, sizeof(lying), out));
  CHECK(decoder.errors().size_mismatch == 1);

  auto stranger = good;
  stranger.hdr.cookie = known + 1;
  CHECK_FALSE(decoder.decode(&stranger, sizeof(stranger), out));
  CHECK(decoder.errors().unknown_cookie == 1);

  // Random bytes of every length up to a big record never crash.
  unsigned char noise[512];
  uint32_t x = 12345;
  for (auto& b : noise) {
    x = x * 1103515245 + 12345;
    b = static_cast<unsigned char>(x >> 16);
  }
  for (size_t n = 0; n <= sizeof(noise); ++n)
    decoder.decode(noise, n, out);

  CHECK(out.empty());
  CHECK(decoder.decoded() == 0);
  CHECK(decoder.decode(&good, sizeof(good), out));
  CHECK(out.size() == 1);
  CHECK(decoder.decoded() == 1);
  CHECK(decoder.errors().total() == 8 + sizeof(noise) + 1);
}

TEST_CASE("decode: a record in an unaligned buffer decodes the same") {
  auto r = fork_record();
  alignas(8) unsigned char buf[sizeof(r) + 1];
  std::memcpy(buf + 1, &r, sizeof(r));
  auto out = decode_record(buf + 1, sizeof(r), is_known);
  REQUIRE(std::holds_alternative<process_event>(out));
  CHECK(std::get<fork_event>(std::get<process_event>(out)).parent_tid == 43);
}
