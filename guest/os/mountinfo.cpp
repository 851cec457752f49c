// SPDX-License-Identifier: Apache-2.0
#include "guest/os/mountinfo.hpp"

#include <charconv>
#include <fstream>
#include <sstream>

namespace allox::os {

std::string unescape_mount_field(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && field[i + 1] >= '0' &&
        field[i + 1] <= '3' && field[i + 2] >= '0' && field[i + 2] <= '7' &&
        field[i + 3] >= '0' && field[i + 3] <= '7') {
      out.push_back(static_cast<char>((field[i + 1] - '0') * 64 +
                                      (field[i + 2] - '0') * 8 +
                                      (field[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

namespace {

std::vector<std::string_view> split_spaces(std::string_view line) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos < line.size()) {
    auto end = line.find(' ', pos);
    if (end == std::string_view::npos)
      end = line.size();
    if (end > pos)
      out.push_back(line.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

bool parse_int(std::string_view s, int& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && ptr == s.data() + s.size();
}

} // namespace

std::vector<mount_entry> parse_mountinfo(std::string_view text) {
  std::vector<mount_entry> result;
  size_t pos = 0;
  while (pos < text.size()) {
    auto eol = text.find('\n', pos);
    if (eol == std::string_view::npos)
      eol = text.size();
    auto fields = split_spaces(text.substr(pos, eol - pos));
    pos = eol + 1;
    // id parent major:minor root mount-point options [optional...] - type
    // source super-options
    size_t sep = 6;
    while (sep < fields.size() && fields[sep] != "-")
      ++sep;
    if (fields.size() < 6 || sep + 3 > fields.size())
      continue;
    mount_entry e;
    if (!parse_int(fields[0], e.mount_id) || !parse_int(fields[1], e.parent_id))
      continue;
    e.root = unescape_mount_field(fields[3]);
    e.mount_point = unescape_mount_field(fields[4]);
    e.options = std::string{fields[5]};
    e.fs_type = std::string{fields[sep + 1]};
    e.source = unescape_mount_field(fields[sep + 2]);
    if (sep + 3 < fields.size())
      e.super_options = std::string{fields[sep + 3]};
    result.push_back(std::move(e));
  }
  return result;
}

expected<std::vector<mount_entry>> read_mountinfo() {
  std::ifstream in{"/proc/self/mountinfo"};
  if (!in)
    return make_error(errc::internal, "cannot read /proc/self/mountinfo");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_mountinfo(ss.str());
}

const mount_entry* mount_containing(const std::vector<mount_entry>& mounts,
                                    std::string_view path) {
  const mount_entry* best = nullptr;
  for (const auto& m : mounts) {
    std::string_view mp = m.mount_point;
    bool contains =
        mp == "/" ||
        (path.size() >= mp.size() && path.substr(0, mp.size()) == mp &&
         (path.size() == mp.size() || path[mp.size()] == '/'));
    if (!contains)
      continue;
    if (best == nullptr || mp.size() >= best->mount_point.size())
      best = &m;
  }
  return best;
}

const mount_entry* find_cgroup2(const std::vector<mount_entry>& mounts) {
  for (const auto& m : mounts)
    if (m.fs_type == "cgroup2")
      return &m;
  return nullptr;
}

} // namespace allox::os
