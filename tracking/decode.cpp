// SPDX-License-Identifier: Apache-2.0
#include "tracking/decode.hpp"

#include <charconv>
#include <cstring>
#include <fstream>

namespace allox::tracking {

namespace {

/// A fixed-size char field up to its first NUL (the kernel may fill it).
template <size_t N>
std::string c_string(const char (&field)[N]) {
  return std::string{field, ::strnlen(field, N)};
}

event_header header_from(const allox_event_header& h) {
  event_header out;
  out.cookie = h.cookie;
  out.seq = h.seq;
  out.time_ns = h.time_ns;
  out.cpu = h.cpu;
  out.root = (h.flags & ALLOX_FLAG_ROOT) != 0;
  out.process = {h.process.start_ns, h.process.tgid};
  return out;
}

/// Copies the record into its C struct: the ring buffer's alignment is
/// 8 bytes, but crafted input may be anywhere.
template <class Record>
Record copy_of(const void* data) {
  Record r;
  std::memcpy(&r, data, sizeof(r));
  return r;
}

size_t expected_size(uint16_t type) {
  switch (type) {
  case ALLOX_EVENT_FORK:
    return sizeof(allox_fork_event);
  case ALLOX_EVENT_EXEC:
    return sizeof(allox_exec_event);
  case ALLOX_EVENT_EXIT:
    return sizeof(allox_exit_event);
  case ALLOX_EVENT_WRITE:
    return sizeof(allox_write_event);
  case ALLOX_EVENT_WRITE_PATH:
    return sizeof(allox_write_path_event);
  default:
    return 0;
  }
}

} // namespace

std::string process_identity::str(std::string_view boot_id) const {
  // One allocation: this runs twice for every fork of a tracked run.
  char start[24];
  char pid[12];
  auto start_end = std::to_chars(start, start + sizeof(start), start_ns).ptr;
  auto pid_end = std::to_chars(pid, pid + sizeof(pid), tgid).ptr;
  std::string out;
  out.reserve(boot_id.size() + 2 + static_cast<size_t>(start_end - start) +
              static_cast<size_t>(pid_end - pid));
  out.append(boot_id).append(1, ':').append(start, start_end);
  out.append(1, ':').append(pid, pid_end);
  return out;
}

std::optional<int> exit_event::exit_code() const {
  if ((status & 0x7f) != 0)
    return std::nullopt;
  return static_cast<int>((status >> 8) & 0xff);
}

std::optional<int> exit_event::signal() const {
  if ((status & 0x7f) == 0)
    return std::nullopt;
  return static_cast<int>(status & 0x7f);
}

const event_header& header_of(const process_event& e) {
  return std::visit(
      [](const auto& ev) -> const event_header& { return ev.hdr; }, e);
}

std::string_view kind_name(const process_event& e) {
  switch (e.index()) {
  case 0:
    return "fork";
  case 1:
    return "exec";
  case 2:
    return "exit";
  case 3:
    return "write";
  default:
    return "write_path";
  }
}

std::string read_boot_id() {
  std::ifstream in{"/proc/sys/kernel/random/boot_id"};
  std::string id;
  std::getline(in, id);
  return id;
}

std::string_view to_string(decode_error e) {
  switch (e) {
  case decode_error::truncated:
    return "truncated";
  case decode_error::bad_abi:
    return "bad_abi";
  case decode_error::unknown_type:
    return "unknown_type";
  case decode_error::size_mismatch:
    return "size_mismatch";
  case decode_error::unknown_cookie:
    return "unknown_cookie";
  }
  return "unknown";
}

std::variant<process_event, decode_error>
decode_record(const void* data, size_t size,
              const std::function<bool(uint64_t)>& known_cookie) {
  if (data == nullptr || size < sizeof(allox_event_header))
    return decode_error::truncated;
  auto h = copy_of<allox_event_header>(data);
  if (h.abi != ALLOX_PROCESS_ABI)
    return decode_error::bad_abi;
  auto want = expected_size(h.type);
  if (want == 0)
    return decode_error::unknown_type;
  if (size < want)
    return decode_error::truncated;
  if (h.size != want)
    return decode_error::size_mismatch;
  if (!known_cookie || !known_cookie(h.cookie))
    return decode_error::unknown_cookie;
  switch (h.type) {
  case ALLOX_EVENT_FORK: {
    auto r = copy_of<allox_fork_event>(data);
    fork_event e;
    e.hdr = header_from(r.hdr);
    e.parent = {r.parent.start_ns, r.parent.tgid};
    e.parent_tid = r.parent_tid;
    e.comm = c_string(r.comm);
    return process_event{std::move(e)};
  }
  case ALLOX_EVENT_EXEC: {
    auto r = copy_of<allox_exec_event>(data);
    exec_event e;
    e.hdr = header_from(r.hdr);
    e.former_tid = r.former_tid;
    e.comm = c_string(r.comm);
    e.filename = c_string(r.filename);
    e.filename_truncated = (r.hdr.flags & ALLOX_FLAG_FILENAME_TRUNCATED) != 0;
    return process_event{std::move(e)};
  }
  case ALLOX_EVENT_WRITE: {
    auto r = copy_of<allox_write_event>(data);
    write_event e;
    e.hdr = header_from(r.hdr);
    e.subvol = r.subvol;
    e.ino = r.ino;
    e.op = r.op;
    e.tid = r.tid;
    return process_event{e};
  }
  case ALLOX_EVENT_WRITE_PATH: {
    auto r = copy_of<allox_write_path_event>(data);
    write_path_event e;
    e.hdr = header_from(r.hdr);
    e.subvol = r.subvol;
    e.dir_ino = r.dir_ino;
    e.op = r.op;
    e.tid = r.tid;
    e.path = c_string(r.path);
    e.absolute = (r.flags & ALLOX_WRITE_PATH_ABSOLUTE) != 0;
    e.truncated = (r.flags & ALLOX_WRITE_PATH_TRUNCATED) != 0;
    return process_event{std::move(e)};
  }
  default: {
    auto r = copy_of<allox_exit_event>(data);
    exit_event e;
    e.hdr = header_from(r.hdr);
    e.tid = r.tid;
    e.status = r.exit_code;
    e.comm = c_string(r.comm);
    return process_event{std::move(e)};
  }
  }
}

bool record_decoder::decode(const void* data, size_t size,
                            std::vector<process_event>& out) {
  auto result = decode_record(data, size, known_);
  if (auto* ev = std::get_if<process_event>(&result)) {
    out.push_back(std::move(*ev));
    ++decoded_;
    return true;
  }
  switch (std::get<decode_error>(result)) {
  case decode_error::truncated:
    ++errors_.truncated;
    break;
  case decode_error::bad_abi:
    ++errors_.bad_abi;
    break;
  case decode_error::unknown_type:
    ++errors_.unknown_type;
    break;
  case decode_error::size_mismatch:
    ++errors_.size_mismatch;
    break;
  case decode_error::unknown_cookie:
    ++errors_.unknown_cookie;
    break;
  }
  return false;
}

} // namespace allox::tracking
