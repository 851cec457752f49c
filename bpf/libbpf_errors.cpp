// SPDX-License-Identifier: Apache-2.0
#include "bpf/libbpf_errors.hpp"

#include "guest/log.hpp"

#include <bpf/libbpf.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>

namespace allox::bpf {

namespace {

thread_local std::string* libbpf_capture = nullptr;

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  char buf[1024];
  int n = std::vsnprintf(buf, sizeof(buf), fmt, args);
  if (n <= 0)
    return n;
  std::string_view line{buf, std::min<size_t>(size_t(n), sizeof(buf) - 1)};
  if (libbpf_capture != nullptr && level != LIBBPF_DEBUG) {
    libbpf_capture->append(line);
    // Keep the tail: verifier logs can be long, the end says why.
    constexpr size_t keep = 2000;
    if (libbpf_capture->size() > 2 * keep)
      libbpf_capture->erase(0, libbpf_capture->size() - keep);
  } else if (level != LIBBPF_DEBUG) {
    while (!line.empty() && line.back() == '\n')
      line.remove_suffix(1);
    log::debug("libbpf", line);
  }
  return n;
}

} // namespace

capture_libbpf::capture_libbpf() {
  static std::once_flag once;
  std::call_once(once, [] { libbpf_set_print(libbpf_print); });
  outer_ = libbpf_capture;
  libbpf_capture = &text_;
}

capture_libbpf::~capture_libbpf() {
  // Nested captures (a load inside an open) hand the messages back.
  libbpf_capture = outer_;
}

caf::error capture_libbpf::error(errc code, const std::string& what,
                                 int err) const {
  auto msg = what + ": " + std::strerror(err < 0 ? -err : err);
  if (!text_.empty()) {
    auto tail = text_;
    while (!tail.empty() && tail.back() == '\n')
      tail.pop_back();
    msg += "; libbpf: " + tail;
  }
  return make_error(code, std::move(msg));
}

} // namespace allox::bpf
