// SPDX-License-Identifier: Apache-2.0
// E2B's sandbox network (allow_internet_access, network.allowOut and
// denyOut) as the session's network settings: no internet is `isolated`;
// rules are `proxy` mode, whose egress broker applies them; neither is
// `inherit`. Pure, so the mapping is unit-tested.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <string>
#include <vector>

namespace allox::e2b {

/// What E2B says of a sandbox's network.
struct network_request {
  bool allow_internet = true;
  /// allowOut and denyOut: CIDRs, bare IP addresses, domain names (a
  /// leading `*.` for subdomains); E2B lets an allowed entry win over a
  /// denied one.
  std::vector<std::string> allow_out;
  std::vector<std::string> deny_out;
};

/// The session's settings for it (session.configure's network and egress).
struct session_network {
  std::string mode;
  std::vector<std::string> allow;
  std::vector<std::string> deny;
};

/// Reads allow_internet_access (top level, as the create and the update
/// bodies carry it) and the network object's allowOut and denyOut; each
/// entry is checked and turned into one of our rules. invalid_argument
/// names the bad field.
expected<network_request> decode_network(const json::object& body,
                                         const json::object* network);

/// The mapping. With a deny of everything (0.0.0.0/0) only allowOut
/// passes; otherwise everything passes but denyOut. Our broker lets a
/// deny win over an allow, which differs from E2B only for a destination
/// named by both lists.
session_network to_session_network(const network_request& r);

/// The record's form (allow_internet, allow_out, deny_out), and back.
json::object network_record(const network_request& r);
network_request network_from_record(const json::object& record);

} // namespace allox::e2b
