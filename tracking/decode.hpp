// SPDX-License-Identifier: Apache-2.0
// Decoding the kernel's ring-buffer records (bpf/process.h). Every input
// is untrusted bytes: a short record, another ABI, an unknown type or an
// unknown run is a counted error, never a crash or an event.
#pragma once

#include "tracking/events.hpp"

#include <cstddef>
#include <functional>

namespace allox::tracking {

enum class decode_error : uint8_t {
  truncated,
  bad_abi,
  unknown_type,
  size_mismatch,
  unknown_cookie,
};

std::string_view to_string(decode_error e);

/// Decodes one record; `known_cookie` says whether a run is tracked.
std::variant<process_event, decode_error>
decode_record(const void* data, size_t size,
              const std::function<bool(uint64_t)>& known_cookie);

/// decode_record with counters.
class record_decoder {
public:
  explicit record_decoder(std::function<bool(uint64_t)> known_cookie)
      : known_(std::move(known_cookie)) {}

  /// Appends the record's event to `out`, or counts why it was refused.
  /// True when an event was appended.
  bool decode(const void* data, size_t size, std::vector<process_event>& out);

  uint64_t decoded() const { return decoded_; }
  const decode_counters& errors() const { return errors_; }

private:
  std::function<bool(uint64_t)> known_;
  uint64_t decoded_ = 0;
  decode_counters errors_;
};

} // namespace allox::tracking
