// SPDX-License-Identifier: Apache-2.0
// Commands and events of a session's network facet (proxy mode's egress
// broker): network.status, and each connection attempt the broker
// relayed or refused, for the session's audit trail.
#pragma once

#include "messages/commands/command.hpp"
#include "messages/records.hpp"
#include "messages/results/network.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

namespace allox::cmd {

/// network.status: mode, namespace, policy and live connection counts.
struct network_status {
  static inline const char* name = "network.status";
  static network_status decode(params::reader& r);
  using reply = network_status_view;
  static constexpr bool needs_exec = true;
  session_ref session;
};

/// Connects to `port` where a process of the session listens, inside that
/// process's network namespace: the E2B front's port forwarding. Sent by
/// fronts only (no RPC action).
struct port_connect {
  static inline const char* name = "port.connect";
  using reply = socket_handle;
  session_ref session;
  uint16_t port = 0;
};

/// One connection attempt through the session's proxy (from the broker's
/// loop thread), audited as `network.connect`.
struct egress_attempt {
  /// When it was refused or ended.
  int64_t timestamp_ns = 0;
  std::string host;
  uint16_t port = 0;
  /// The address connected to (or the first refused one).
  std::string address;
  bool allowed = false;
  /// "tunnel" (CONNECT) or "http".
  std::string kind;
  /// Why it was refused or failed; empty when it was relayed.
  std::string error;
  uint64_t bytes_sent = 0;     ///< sandbox -> destination
  uint64_t bytes_received = 0; ///< destination -> sandbox
  uint64_t duration_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, network_status& x) {
  return f(caf::meta::type_name("network_status"), x.session);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, port_connect& x) {
  return f(caf::meta::type_name("port_connect"), x.session, x.port);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, egress_attempt& x) {
  return f(caf::meta::type_name("egress_attempt"), x.timestamp_ns, x.host,
           x.port, x.address, x.allowed, x.kind, x.error, x.bytes_sent,
           x.bytes_received, x.duration_ms);
}

} // namespace allox::cmd
