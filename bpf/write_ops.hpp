// SPDX-License-Identifier: Apache-2.0
// The stable names of write provenance's ops (enum allox_write_op in
// bpf/process.h), header-only: the tracker's decoder and the sessions'
// write sets name them the same way, with or without the BPF build.
#pragma once

#include "bpf/process.h"

#include <cstdint>
#include <string_view>

namespace allox::bpf {

/// "write", "create", "rename", ...; "unknown" for a number this build
/// does not know.
inline std::string_view write_op_name(uint32_t op) {
  constexpr std::string_view names[ALLOX_WRITE_OPS] = {
      "unknown", "write",   "create",  "truncate", "mmap",
      "unlink",  "rmdir",   "mkdir",   "rename",   "replace",
      "link",    "symlink", "setattr", "mknod"};
  return op < ALLOX_WRITE_OPS ? names[op] : "unknown";
}

} // namespace allox::bpf
