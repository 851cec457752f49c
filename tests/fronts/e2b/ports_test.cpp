// SPDX-License-Identifier: Apache-2.0
// The Host of a sandbox's port, as the SDK's getHost(port) builds it, and
// the hosts that must stay the daemon's.
#include "fronts/e2b/handlers.hpp"

#include <doctest/doctest.h>

using namespace allox;
using namespace allox::e2b;

TEST_CASE("e2b ports: a Host <port>-<sandbox>.<domain> names the port") {
  auto id = new_sandbox_id();
  auto p = parse_port_host("8000-" + id + ".e2b.app");
  REQUIRE(p);
  CHECK(p->port == 8000);
  CHECK(p->id == id);
  auto with_listener = parse_port_host("65535-" + id + ".localhost:8092");
  REQUIRE(with_listener);
  CHECK(with_listener->port == 65535);
  for (const auto& other :
       {std::string{"127.0.0.1:8092"}, std::string{"localhost"},
        std::string{"my-host.example"}, "0-" + id + ".e2b.app",
        "65536-" + id + ".e2b.app", "123456-" + id + ".e2b.app",
        "80-" + id + ".", "80-" + id, "-" + id + ".e2b.app",
        std::string{"80-iABCDEF0123456789abc.e2b.app"},
        std::string{"80-i0123.e2b.app"}, "80x-" + id + ".e2b.app"}) {
    CAPTURE(other);
    CHECK_FALSE(parse_port_host(other));
  }
}
