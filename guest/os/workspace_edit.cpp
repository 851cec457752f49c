// SPDX-License-Identifier: Apache-2.0
#include "guest/os/workspace_edit.hpp"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <regex.h>

namespace allox::os {

namespace {

/// A compiled POSIX extended regular expression. glibc's matcher neither
/// recurses per input byte nor backtracks without back-references, so a
/// line an agent wrote cannot blow the worker's stack or hang it, as
/// std::regex can.
class extended_regex {
public:
  extended_regex() = default;
  extended_regex(const extended_regex&) = delete;
  extended_regex& operator=(const extended_regex&) = delete;
  ~extended_regex() {
    if (compiled_)
      ::regfree(&re_);
  }

  caf::error compile(const std::string& pattern) {
    int rc = ::regcomp(&re_, pattern.c_str(), REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char why[256];
      ::regerror(rc, &re_, why, sizeof why);
      return make_error(errc::invalid_argument,
                        "pattern is not a valid extended regular "
                        "expression: " +
                            std::string{why});
    }
    compiled_ = true;
    return caf::none;
  }

  bool search(std::string_view text) const {
    regmatch_t span{0, static_cast<regoff_t>(text.size())};
    return ::regexec(&re_, text.data(), 1, &span, REG_STARTEND) == 0;
  }

private:
  regex_t re_{};
  bool compiled_ = false;
};

/// Reads all of regular file `fd` (at most `max` bytes; `size` from fstat).
expected<std::string> read_whole(int fd, const std::string& rel,
                                 uint64_t size) {
  std::string data;
  data.resize(static_cast<size_t>(size));
  size_t got = 0;
  while (got < data.size()) {
    auto n = ::pread(fd, data.data() + got, data.size() - got,
                     static_cast<off_t>(got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return sys_error("read " + rel);
    if (n == 0)
      break; // shrank meanwhile
    got += static_cast<size_t>(n);
  }
  data.resize(got);
  return data;
}

/// The path below the search's directory.
std::string below(const std::string& dir, const std::string& path) {
  if (dir.empty())
    return path;
  return path.size() > dir.size() ? path.substr(dir.size() + 1) : path;
}

/// Adds the lines of `data` that match to `out`; false once the match
/// bound is reached.
template <class Matches>
bool collect_lines(const std::string& path, const std::string& data,
                   Matches matches, search_result& out, size_t bound) {
  bool any = false;
  size_t start = 0;
  int64_t line = 1;
  while (start < data.size()) {
    auto end = data.find('\n', start);
    if (end == std::string::npos)
      end = data.size();
    std::string_view text{data.data() + start, end - start};
    if (matches(text)) {
      if (out.matches.size() == bound) {
        out.truncated = true;
        return false;
      }
      if (!any)
        out.files.push_back(path);
      any = true;
      out.matches.push_back(
          {path, line, std::string{text.substr(0, max_search_line)}});
    }
    start = end + 1;
    ++line;
  }
  return true;
}

} // namespace

bool glob_matches(const std::string& glob, const std::string& name) {
  if (glob.empty())
    return true;
  if (glob.find('/') != std::string::npos)
    return ::fnmatch(glob.c_str(), name.c_str(), FNM_PATHNAME) == 0;
  auto slash = name.rfind('/');
  auto base = slash == std::string::npos ? name : name.substr(slash + 1);
  return ::fnmatch(glob.c_str(), base.c_str(), 0) == 0;
}

expected<search_result> search_files(const workspace_root& root,
                                     const std::string& rel,
                                     const std::string& pattern,
                                     const std::string& glob, bool regex,
                                     const search_bounds& bounds) {
  extended_regex re;
  if (regex)
    if (auto err = re.compile(pattern))
      return err;
  // Every entry beneath, sorted by path; symlinked directories are not
  // entered (list_files' walk).
  auto all = list_files(root, rel, true, 200000, {});
  if (!all)
    return all.error();
  search_result out;
  out.path = rel;
  out.truncated = all->has_more;
  uint64_t read = 0;
  for (const auto& e : all->entries) {
    if (e.kind != file_kind::file || !glob_matches(glob, below(rel, e.path)))
      continue;
    if (pattern.empty()) {
      if (out.files.size() == bounds.matches) {
        out.truncated = true;
        break;
      }
      out.files.push_back(e.path);
      continue;
    }
    if (static_cast<size_t>(out.files_scanned) == bounds.files ||
        read + static_cast<uint64_t>(e.size) > bounds.bytes) {
      out.truncated = true;
      break;
    }
    if (static_cast<uint64_t>(e.size) > bounds.file_size)
      continue;
    auto opened = open_regular(root, e.path);
    if (!opened)
      continue; // gone or swapped meanwhile
    auto& [fd, sb] = *opened;
    if (static_cast<uint64_t>(sb.st_size) > bounds.file_size)
      continue;
    auto data = read_whole(fd.get(), e.path, static_cast<uint64_t>(sb.st_size));
    if (!data)
      return data.error();
    ++out.files_scanned;
    read += data->size();
    if (std::memchr(data->data(), '\0', std::min<size_t>(data->size(), 8192)))
      continue; // binary
    bool more = regex ? collect_lines(
                            e.path, *data,
                            [&re](std::string_view t) { return re.search(t); },
                            out, bounds.matches)
                      : collect_lines(
                            e.path, *data,
                            [&pattern](std::string_view t) {
                              return t.find(pattern) != std::string_view::npos;
                            },
                            out, bounds.matches);
    if (!more)
      break;
  }
  return out;
}

expected<replace_result> replace_in_file(const workspace_root& root,
                                         const std::string& rel,
                                         const std::string& from,
                                         const std::string& to,
                                         int64_t expected, uint64_t max_size) {
  auto opened = open_regular(root, rel);
  if (!opened)
    return opened.error();
  auto& [fd, sb] = *opened;
  if (static_cast<uint64_t>(sb.st_size) > max_size)
    return make_error(errc::payload_too_large,
                      rel + " is larger than " + std::to_string(max_size) +
                          " bytes: edit it with file.write");
  auto data = read_whole(fd.get(), rel, static_cast<uint64_t>(sb.st_size));
  if (!data)
    return data.error();
  int64_t count = 0;
  for (auto at = data->find(from); at != std::string::npos;
       at = data->find(from, at + from.size()))
    ++count;
  if (count != expected)
    return make_error(count == 0 ? errc::not_found : errc::conflict,
                      "old_string occurs " + std::to_string(count) +
                          " times in " + rel + ", expected " +
                          std::to_string(expected) + ": nothing was changed");
  std::string edited;
  edited.reserve(data->size() + static_cast<size_t>(count) * to.size());
  size_t last = 0;
  for (auto at = data->find(from); at != std::string::npos;
       at = data->find(from, at + from.size())) {
    edited.append(*data, last, at - last);
    edited += to;
    last = at + from.size();
  }
  edited.append(*data, last, std::string::npos);
  auto written =
      write_file(root, rel, edited, sb.st_mode & 07777 & ~07000u, false);
  if (!written)
    return written.error();
  replace_result r;
  r.path = rel;
  r.replacements = count;
  r.size = written->size;
  return r;
}

} // namespace allox::os
