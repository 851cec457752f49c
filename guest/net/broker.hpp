// SPDX-License-Identifier: Apache-2.0
// The egress broker of `proxy` network mode: one libuv loop on a thread of
// its own serves the proxy socket of every proxy session (each created
// inside that session's namespace, guest/net/netns.hpp) and relays what
// the policy allows from the guest's own network namespace.
//
//   accept -> read the request header (<= 64 KiB, 30 s)
//          -> policy by name -> resolve (libuv's getaddrinfo; never the
//             sandbox's DNS) -> never the daemon's own addresses ->
//             policy per address -> connect (15 s, each
//             allowed address in turn)
//          -> CONNECT: "200 Connection Established"; plain HTTP: the
//             request in origin form -> relay both ways until both ends
//             have closed (half-close passed on; reading from one side
//             pauses while the other has 4 MiB unwritten)
//          -> one egress_event per attempt, refused or finished, to the
//             session's sink (its audit trail)
//
// A refused request gets 403 with the reason, an unreachable one 502.
// Every method may be called from any thread; work is queued to the loop.
#pragma once

#include "guest/net/egress_rules.hpp"
#include "guest/os/unique_fd.hpp"
#include "messages/commands/network.hpp"
#include "messages/errors.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace allox::net {

/// One connection attempt, as audited (the message its session gets).
using egress_event = cmd::egress_attempt;

/// A session's live counters, written by the loop, read by anyone.
struct egress_counters {
  std::atomic<uint64_t> open{0};
  std::atomic<uint64_t> total{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> bytes_received{0};
};

class broker {
public:
  using sink = std::function<void(egress_event)>;

  /// Starts the loop thread. No policy opens a `forbidden` destination
  /// (the daemon's own addresses, as the connect guard refuses them).
  static expected<std::shared_ptr<broker>>
  start(std::vector<rule> forbidden = {});
  /// Closes everything and joins the loop thread.
  ~broker();
  broker(const broker&) = delete;
  broker& operator=(const broker&) = delete;

  /// Serves `listener` for session `key` under `policy`; `events` is
  /// called on the loop thread, once per attempt. Replaces an earlier
  /// attachment of the same key (closing its connections).
  std::shared_ptr<const egress_counters> attach(const std::string& key,
                                                os::unique_fd listener,
                                                egress_policy policy,
                                                sink events);

  /// New connections of `key` follow `policy`; open ones keep theirs.
  void set_policy(const std::string& key, egress_policy policy);

  /// Stops serving `key` and closes its connections.
  void detach(const std::string& key);

  struct impl;

private:
  broker();
  void post(std::function<void()> work);

  std::unique_ptr<impl> impl_;
};

} // namespace allox::net
