// SPDX-License-Identifier: Apache-2.0
#include "bpf/connect_guard.hpp"

#include "bpf/connect_guard.h"
#include "bpf/connect_guard.skel.h" // generated
#include "bpf/libbpf_errors.hpp"
#include "guest/os/unique_fd.hpp"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace allox::bpf {

namespace {

/// The rule as the programs look it up: loopback and "this host" as one
/// address each, IPv4-mapped IPv6 as IPv4.
guard_rule normalised(guard_rule r) {
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (r.family == 6 && std::memcmp(r.addr.data(), mapped, 12) == 0) {
    std::memmove(r.addr.data(), r.addr.data() + 12, 4);
    std::fill(r.addr.begin() + 4, r.addr.end(), 0);
    r.family = 4;
  }
  if (r.family == 4) {
    if (r.addr[0] == 127 ||
        (r.addr[0] | r.addr[1] | r.addr[2] | r.addr[3]) == 0)
      r.addr = {127, 0, 0, 1};
  } else {
    bool low_zero = std::all_of(r.addr.begin(), r.addr.begin() + 15,
                                [](uint8_t b) { return b == 0; });
    if (low_zero && r.addr[15] <= 1)
      r.addr[15] = 1; // :: and ::1
  }
  return r;
}

expected<guard_rule> parse_addr(const std::string& host, uint16_t port) {
  guard_rule r;
  r.port = port;
  if (::inet_pton(AF_INET, host.c_str(), r.addr.data()) == 1)
    r.family = 4;
  else if (::inet_pton(AF_INET6, host.c_str(), r.addr.data()) == 1)
    r.family = 6;
  else
    return make_error(errc::invalid_argument, "not an IP address: " + host);
  return normalised(r);
}

bool is_wildcard(const guard_rule& r) {
  return std::all_of(r.addr.begin(), r.addr.end(),
                     [](uint8_t b) { return b == 0; });
}

} // namespace

std::string guard_rule::text() const {
  char buf[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(family == 4 ? AF_INET : AF_INET6, addr.data(), buf, sizeof buf);
  std::string host = family == 4 ? buf : "[" + std::string{buf} + "]";
  return host + ":" + (port == 0 ? std::string{"*"} : std::to_string(port));
}

expected<guard_rule> parse_guard_rule(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == text.size())
    return make_error(errc::invalid_argument,
                      "expected ADDR:PORT or ADDR:*, not " + std::string{text});
  std::string host{text.substr(0, colon)};
  std::string port_text{text.substr(colon + 1)};
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  uint16_t port = 0;
  if (port_text != "*") {
    unsigned long n = 0;
    for (char ch : port_text) {
      if (ch < '0' || ch > '9' || n > 65535)
        return make_error(errc::invalid_argument,
                          "bad port in " + std::string{text});
      n = n * 10 + static_cast<unsigned long>(ch - '0');
    }
    if (n == 0 || n > 65535)
      return make_error(errc::invalid_argument,
                        "bad port in " + std::string{text});
    port = static_cast<uint16_t>(n);
  }
  return parse_addr(host, port);
}

expected<std::vector<guard_rule>> listen_rules(const std::string& host,
                                               uint16_t port) {
  guard_rule raw;
  if (::inet_pton(AF_INET, host.c_str(), raw.addr.data()) == 1)
    raw.family = 4;
  else if (::inet_pton(AF_INET6, host.c_str(), raw.addr.data()) == 1)
    raw.family = 6;
  else if (host == "localhost")
    raw = {4, {127, 0, 0, 1}, 0};
  else
    return make_error(errc::invalid_argument, "not an IP address: " + host);
  raw.port = port;
  std::vector<guard_rule> out;
  auto add = [&out](const guard_rule& r) {
    auto n = normalised(r);
    if (std::find(out.begin(), out.end(), n) == out.end())
      out.push_back(n);
  };
  if (!is_wildcard(raw)) {
    add(raw);
    return out;
  }
  // A wildcard socket answers on every address of the machine; an IPv6
  // one (dual-stack) on the IPv4 ones too.
  add({4, {127, 0, 0, 1}, port});
  if (raw.family == 6)
    add({6, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, port});
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0)
    return sys_error("list the machine's addresses");
  for (auto* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr)
      continue;
    guard_rule r;
    r.port = port;
    if (i->ifa_addr->sa_family == AF_INET) {
      r.family = 4;
      auto* a = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
      std::memcpy(r.addr.data(), &a->sin_addr, 4);
    } else if (i->ifa_addr->sa_family == AF_INET6 && raw.family == 6) {
      r.family = 6;
      auto* a = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
      std::memcpy(r.addr.data(), &a->sin6_addr, 16);
    } else {
      continue;
    }
    add(r);
  }
  ::freeifaddrs(list);
  return out;
}

expected<std::unique_ptr<connect_guard>>
connect_guard::attach(const std::string& cgroup,
                      std::vector<guard_rule> rules) {
  if (rules.size() > ALLOX_GUARD_MAX_RULES)
    return make_error(errc::invalid_argument,
                      "at most " + std::to_string(ALLOX_GUARD_MAX_RULES) +
                          " refused destinations");
  capture_libbpf capture;
  std::unique_ptr<connect_guard> guard{new connect_guard};
  guard->skel_ = allox_connect_guard__open_and_load();
  if (guard->skel_ == nullptr)
    return capture.error(errc::unsupported,
                         "load the connect guard (cgroup connect programs)",
                         errno);
  for (auto& r : rules) {
    r = normalised(r);
    allox_guard_key key{};
    key.family = r.family;
    key.port = r.port;
    std::memcpy(key.addr, r.addr.data(), sizeof key.addr);
    uint8_t one = 1;
    if (bpf_map__update_elem(guard->skel_->maps.refused, &key, sizeof key, &one,
                             sizeof one, BPF_ANY) != 0)
      return capture.error(errc::internal, "refuse " + r.text(), errno);
  }
  guard->rules_ = std::move(rules);
  os::unique_fd dir{::open(cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (!dir)
    return sys_error("open the cgroup " + cgroup);
  // Links, not legacy attachments: they end with this process, so a
  // daemon that dies leaves nothing attached that a new one cannot
  // replace; and they stack with other programs on the same groups.
  auto& s = *guard->skel_;
  for (auto [prog, link, name] :
       {std::tuple{s.progs.guard_connect4, &s.links.guard_connect4, "connect4"},
        std::tuple{s.progs.guard_connect6, &s.links.guard_connect6,
                   "connect6"}}) {
    *link = bpf_program__attach_cgroup(prog, dir.get());
    if (*link == nullptr)
      return capture.error(
          errc::internal,
          std::string{"attach cgroup/"} + name + " to " + cgroup, errno);
  }
  return guard;
}

connect_guard::~connect_guard() {
  if (skel_ != nullptr)
    allox_connect_guard__destroy(skel_);
}

uint64_t connect_guard::refusals() const {
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0)
    return 0;
  std::vector<uint64_t> per_cpu(static_cast<size_t>(cpus));
  uint32_t zero = 0;
  if (bpf_map__lookup_elem(skel_->maps.refusals, &zero, sizeof zero,
                           per_cpu.data(), per_cpu.size() * sizeof(uint64_t),
                           0) != 0)
    return 0;
  uint64_t sum = 0;
  for (auto n : per_cpu)
    sum += n;
  return sum;
}

} // namespace allox::bpf
