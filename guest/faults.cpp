// SPDX-License-Identifier: Apache-2.0
#include "guest/faults.hpp"

#include "guest/log.hpp"
#include "messages/params.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace allox {

bool fault_injection_enabled() {
#ifdef ALLOX_FAULT_INJECTION
  return true;
#else
  return false;
#endif
}

expected<fault> parse_fault(const json::object& p) {
  if (!fault_injection_enabled())
    return make_error(errc::unsupported,
                      "fault injection is not compiled into this build");
  auto point = params::required_string(p, "point");
  if (!point)
    return point.error();
  auto effect = params::required_string(p, "effect");
  if (!effect)
    return effect.error();
  if (*effect != "delay" && *effect != "throw" && *effect != "crash")
    return make_error(errc::invalid_argument,
                      "effect must be delay, throw or crash");
  auto millis = params::optional_int(p, "millis", 0);
  if (!millis)
    return millis.error();
  if (*millis < 0 || *millis > 600000)
    return make_error(errc::invalid_argument, "millis must be 0..600000");
  return fault{*point, *effect, static_cast<uint32_t>(*millis)};
}

caf::error fault_set::arm(const json::object& params) {
  auto f = parse_fault(params);
  if (!f)
    return f.error();
  arm(std::move(*f));
  return caf::none;
}

fault_set fault_set::take(std::string_view prefix) {
  fault_set out;
  for (auto it = armed_.begin(); it != armed_.end();) {
    if (std::string_view{it->point}.substr(0, prefix.size()) == prefix) {
      out.armed_.push_back(std::move(*it));
      it = armed_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void fault_set::trigger(std::string_view point) {
#ifdef ALLOX_FAULT_INJECTION
  for (auto it = armed_.begin(); it != armed_.end(); ++it) {
    if (it->point != point)
      continue;
    auto f = std::move(*it);
    armed_.erase(it);
    log::warn("fault", "firing " + f.effect + " at " + f.point);
    std::this_thread::sleep_for(std::chrono::milliseconds(f.millis));
    if (f.effect == "delay") {
      // slept
    } else if (f.effect == "throw") {
      throw std::runtime_error("injected fault at " + f.point);
    } else {
      ::kill(::getpid(), SIGKILL);
      ::pause();
    }
    return;
  }
#else
  (void)point;
#endif
}

} // namespace allox
