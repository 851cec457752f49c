// SPDX-License-Identifier: Apache-2.0
// The queue between a transfer's loop side and its worker: an upload's
// buffers go round instead of being allocated per read, count in full
// against the capacity, and hand the worker exactly the bytes offered.
#include "guest/http/transfer_channel.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string_view>

using namespace allox;
using http::transfer_channel;

namespace {

/// A channel on a loop of its own, closed and drained at the end.
struct channel_fixture {
  uv_loop_t loop{};
  std::shared_ptr<transfer_channel> ch;

  channel_fixture() {
    uv_loop_init(&loop);
    ch = transfer_channel::open(&loop, [] {});
  }

  ~channel_fixture() {
    ch->close();
    ch.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }

  /// The worker's next pull: true with bytes.
  bool pulled(std::string_view& bytes) {
    auto more = ch->pull(bytes);
    return more && *more;
  }

  /// Offers `text` in a buffer from reuse(); returns the buffer's bytes.
  const char* offer(std::string_view text) {
    auto buffer = ch->reuse();
    std::memcpy(buffer.data(), text.data(), text.size());
    const char* where = buffer.data();
    ch->offer(std::move(buffer), text.size());
    return where;
  }
};

} // namespace

TEST_CASE_FIXTURE(channel_fixture,
                  "transfer channel: the worker gets exactly the bytes "
                  "offered, then the end of the body") {
  offer("hello");
  offer("world!");
  ch->end_input();
  std::string_view bytes;
  REQUIRE(pulled(bytes));
  CHECK(bytes == "hello");
  REQUIRE(pulled(bytes));
  CHECK(bytes == "world!");
  auto more = ch->pull(bytes);
  REQUIRE(more);
  CHECK_FALSE(*more);
}

TEST_CASE_FIXTURE(channel_fixture,
                  "transfer channel: an upload's buffers go round between the "
                  "loop and the worker") {
  auto fresh = ch->reuse();
  CHECK(fresh.size() == os::transfer_chunk);
  const char* first = offer("a");
  const char* second = offer("b");
  CHECK(first != second);
  std::string_view bytes;
  REQUIRE(pulled(bytes));
  CHECK(bytes.data() == first);
  // The worker's next pull gives the first buffer back, written out.
  REQUIRE(pulled(bytes));
  CHECK(bytes.data() == second);
  // Given back as it was, not zero-filled anew.
  auto again = ch->reuse();
  CHECK(again.data() == first);
  CHECK(again[0] == 'a');
  CHECK(again.size() == os::transfer_chunk);
}

TEST_CASE_FIXTURE(channel_fixture,
                  "transfer channel: upload buffers count in full, however "
                  "little of them is filled") {
  CHECK(ch->idle());
  size_t buffers = transfer_channel::capacity / os::transfer_chunk;
  for (size_t i = 0; i < buffers; ++i) {
    CHECK_FALSE(ch->full());
    offer("x");
  }
  CHECK(ch->full());
  CHECK_FALSE(ch->idle());
  std::string_view bytes;
  REQUIRE(pulled(bytes));
  CHECK(bytes == "x");
  CHECK_FALSE(ch->full());
}

TEST_CASE_FIXTURE(channel_fixture,
                  "transfer channel: a cancelled upload fails the worker's "
                  "next pull") {
  offer("lost");
  ch->cancel();
  std::string_view bytes;
  auto more = ch->pull(bytes);
  REQUIRE_FALSE(more);
  CHECK(code_of(more.error()) == errc::invalid_argument);
}
