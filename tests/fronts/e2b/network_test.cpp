// SPDX-License-Identifier: Apache-2.0
// E2B's network settings as the session's mode and proxy policy.
#include "fronts/e2b/network.hpp"

#include <doctest/doctest.h>

using namespace allox;
using namespace allox::e2b;

namespace {

network_request decoded(const char* body) {
  auto doc = json::parse(body).as_object();
  const json::object* net = nullptr;
  if (auto* n = doc.if_contains("network"))
    net = &n->as_object();
  auto r = decode_network(doc, net);
  REQUIRE(r);
  return *r;
}

using strings = std::vector<std::string>;

} // namespace

TEST_CASE("e2b network: no rules inherit, no internet is isolated") {
  CHECK(to_session_network(decoded("{}")).mode == "inherit");
  auto cut = to_session_network(decoded(
      R"({"allow_internet_access":false,"network":{"allowOut":["a.b"]}})"));
  CHECK(cut.mode == "isolated");
  CHECK(cut.allow.empty());
}

TEST_CASE("e2b network: a deny of everything leaves only allowOut, else "
          "everything passes but denyOut") {
  auto only = to_session_network(decoded(
      R"({"network":{"denyOut":["0.0.0.0/0"],"allowOut":["example.com","*.example.org","8.8.8.8","10.0.0.0/8","fd00::/8"]}})"));
  CHECK(only.mode == "proxy");
  CHECK(only.allow == strings{"example.com:*", "*.example.org:*", "8.8.8.8:*",
                              "10.0.0.0/8:*", "[fd00::/8]:*"});
  CHECK(only.deny.empty());
  auto but = to_session_network(
      decoded(R"({"network":{"denyOut":["10.0.0.0/8","evil.test"]}})"));
  CHECK(but.allow == strings{"*:*"});
  CHECK(but.deny == strings{"10.0.0.0/8:*", "evil.test:*"});
}

TEST_CASE("e2b network: malformed entries are refused naming the field") {
  auto refused = [](const char* body) {
    auto doc = json::parse(body).as_object();
    auto r = decode_network(doc, &doc.at("network").as_object());
    REQUIRE_FALSE(r);
    CHECK(code_of(r.error()) == errc::invalid_argument);
    return message_of(r.error());
  };
  CHECK(refused(R"({"network":{"allowOut":"x"}})") ==
        "network.allowOut must be an array");
  CHECK(refused(R"({"network":{"denyOut":[1]}})") ==
        "network.denyOut holds strings only");
  CHECK(refused(R"({"network":{"allowOut":["a b"]}})") ==
        "network entry 'a b' is not an address, a CIDR or a domain name");
  CHECK(refused(R"({"network":{},"allow_internet_access":"no"})") ==
        "allow_internet_access must be a boolean");
}

TEST_CASE("e2b network: the record keeps the request") {
  auto r = decoded(
      R"({"allow_internet_access":true,"network":{"allowOut":["a.b"],"denyOut":["0.0.0.0/0"]}})");
  auto back = network_from_record(network_record(r));
  CHECK(back.allow_internet);
  CHECK(back.allow_out == strings{"a.b"});
  CHECK(back.deny_out == strings{"0.0.0.0/0"});
}
