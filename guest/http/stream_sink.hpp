// SPDX-License-Identifier: Apache-2.0
// The sink a live stream (GET /v1/stream) gives its session: the session
// pushes the run's row from its actor thread; the row travels to the loop
// thread through the server's queue (server::push_stream).
#pragma once

#include "messages/rpc.hpp"

#include <atomic>
#include <cstdint>

namespace allox::http {

class server;

class stream_sink final : public run_sink {
public:
  stream_sink(server* srv, uint64_t stream) : srv_(srv), stream_(stream) {}

  /// Thread-safe; false once the stream has closed.
  bool push(const run_row& row) override;

  /// Called by the connection when it closes (loop thread).
  void close() { open_ = false; }

private:
  server* srv_;
  uint64_t stream_;
  std::atomic<bool> open_{true};
};

} // namespace allox::http
