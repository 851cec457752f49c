// SPDX-License-Identifier: Apache-2.0
// The egress policy of proxy mode: rule syntax, name and address matching,
// deny over allow, and protected addresses reachable only by address
// rules.
#include "guest/net/egress_rules.hpp"

#include <doctest/doctest.h>

using namespace allox;
using namespace allox::net;

namespace {

address addr(const std::string& text) {
  address a;
  REQUIRE(address::parse(text, a));
  return a;
}

egress_policy policy(std::vector<std::string> allow,
                     std::vector<std::string> deny = {}) {
  auto p = egress_policy::parse(allow, deny);
  REQUIRE(p);
  return *p;
}

bool allowed(const egress_policy& p, const std::string& host, uint16_t port,
             const std::string& resolved) {
  return p.check_name(host, port).allowed &&
         p.check_address(host, port, addr(resolved), {}).allowed;
}

} // namespace

TEST_CASE("egress rules: names, wildcards, addresses, ranges and ports "
          "parse to their normal form") {
  for (const auto& [in, out] : std::vector<std::pair<std::string, std::string>>{
           {"API.Example.com.:443", "api.example.com:443"},
           {"*.example.org:443", "*.example.org:443"},
           {"*:80", "*:80"},
           {"10.0.0.0/8:*", "10.0.0.0/8:*"},
           {"192.0.2.7:8000-8100", "192.0.2.7:8000-8100"},
           {"[2001:db8::1]:443", "[2001:db8::1]:443"},
           {"[2001:DB8::/32]:*", "[2001:db8::/32]:*"},
           {" example.org : 443 ", "example.org:443"}}) {
    CAPTURE(in);
    auto r = parse_rule(in);
    REQUIRE(r);
    CHECK(r->text == out);
  }
  for (const char* bad :
       {"example.org", ":443", "example.org:", "example.org:0",
        "example.org:65536", "example.org:http", "ex*ample.org:1",
        "*example.org:1", "a..b:1", "10.0.0.0/40:1", "2001:db8::1:443",
        "[example.org]:1", "example.org/8:1", "a.b:9-1", "ex ample.org:1x"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_rule(bad));
  }
}

TEST_CASE("egress rules: nothing is allowed by default, deny wins over "
          "allow, wildcards cover subdomains only") {
  CHECK_FALSE(allowed(policy({}), "example.org", 443, "93.184.216.34"));
  auto p = policy({"*.example.org:443", "api.example.com:443"},
                  {"bad.example.org:*"});
  CHECK(allowed(p, "a.example.org", 443, "93.184.216.34"));
  CHECK(allowed(p, "x.y.example.org", 443, "93.184.216.34"));
  CHECK_FALSE(allowed(p, "example.org", 443, "93.184.216.34"));
  CHECK_FALSE(allowed(p, "a.example.org", 80, "93.184.216.34"));
  CHECK_FALSE(allowed(p, "evil-example.org", 443, "93.184.216.34"));
  CHECK_FALSE(allowed(p, "bad.example.org", 443, "93.184.216.34"));
  CHECK(p.check_name("bad.example.org", 443).reason ==
        "denied by bad.example.org:*");
  CHECK(allowed(p, "api.example.com", 443, "93.184.216.34"));
  // Names never need DNS to be refused.
  CHECK(p.check_name("other.net", 443).reason == "not on the egress allowlist");
}

TEST_CASE("egress rules: private, loopback, link-local and own addresses "
          "need an address rule, whatever the name rules say") {
  auto by_name = policy({"*:443", "intranet.example:443"});
  for (const char* a :
       {"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
        "100.64.0.1", "0.0.0.0", "224.0.0.1", "::1", "::", "fe80::1", "fd00::1",
        "::ffff:10.0.0.1", "ff02::1"}) {
    CAPTURE(a);
    CHECK(special_purpose(addr(a)));
    CHECK_FALSE(allowed(by_name, "intranet.example", 443, a));
  }
  CHECK_FALSE(special_purpose(addr("93.184.216.34")));
  CHECK_FALSE(special_purpose(addr("2606:2800:220:1::1")));
  // The guest's own public address is protected too.
  auto own = addr("203.0.113.9");
  CHECK_FALSE(
      by_name.check_address("intranet.example", 443, own, {own}).allowed);
  CHECK(by_name.check_address("intranet.example", 443, own, {}).allowed);
  // An address rule reaches them, for names and literals alike.
  auto by_address =
      policy({"10.0.0.0/8:*", "[fd00::/8]:443"}, {"10.9.0.0/16:*"});
  CHECK(allowed(by_address, "10.1.2.3", 5432, "10.1.2.3"));
  CHECK(allowed(by_address, "db.internal", 5432, "10.1.2.3"));
  CHECK(allowed(by_address, "fd00::5", 443, "fd00::5"));
  CHECK_FALSE(allowed(by_address, "fd00::5", 80, "fd00::5"));
  CHECK_FALSE(allowed(by_address, "10.9.1.1", 5432, "10.9.1.1"));
  CHECK_FALSE(allowed(by_address, "11.0.0.1", 5432, "11.0.0.1"));
  // An IPv4-mapped IPv6 literal is the IPv4 address.
  CHECK(allowed(by_address, "::ffff:10.1.2.3", 22, "::ffff:10.1.2.3"));
}
