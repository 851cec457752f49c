// SPDX-License-Identifier: Apache-2.0
// libbpf's reasons for a failed load, as part of our errors: libbpf
// reports them (verifier log, missing BTF, ...) through its print
// callback. While a capture_libbpf lives on a thread, that thread's
// messages are kept and appended to the error it makes; otherwise they go
// to the log at debug level.
#pragma once

#include "messages/errors.hpp"

#include <string>

namespace allox::bpf {

/// Captures libbpf's messages on this thread for its lifetime.
class capture_libbpf {
public:
  capture_libbpf();
  ~capture_libbpf();
  capture_libbpf(const capture_libbpf&) = delete;
  capture_libbpf& operator=(const capture_libbpf&) = delete;

  /// "<what>: <strerror(-err)>[; libbpf: <messages>]"
  caf::error error(errc code, const std::string& what, int err) const;

private:
  std::string text_;
  std::string* outer_ = nullptr;
};

} // namespace allox::bpf
