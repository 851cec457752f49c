// SPDX-License-Identifier: Apache-2.0
// envd's filesystem.Filesystem service and /files over a sandbox's
// workspace: E2B's paths (absolute under /home/user, or relative to it)
// become the session's file.* commands, which resolve every path beneath
// the workspace (guest/os/workspace_files.hpp): `..` and symlinks out of
// it are refused by the kernel, not by string checks here.
#include "fronts/e2b/handlers.hpp"

#include "fronts/e2b/gzip.hpp"
#include "fronts/e2b/multipart.hpp"
#include "messages/commands/files.hpp"
#include "messages/ids.hpp"

#include <memory>

namespace allox::e2b {

namespace bhttp = boost::beast::http;

namespace {

// -- EntryInfo ----------------------------------------------------------------

/// Go's os.FileMode bits, as envd sends them.
constexpr uint32_t go_mode_dir = 1u << 31;
constexpr uint32_t go_mode_symlink = 1u << 27;

std::string permissions(const file_entry& e) {
  std::string out = e.kind == file_kind::directory ? "d"
                    : e.kind == file_kind::symlink ? "L"
                                                   : "-";
  const char* rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i)
    out.push_back((e.mode & (0400 >> i)) != 0 ? rwx[i] : '-');
  return out;
}

json::object entry_info(const file_entry& e) {
  auto slash = e.path.rfind('/');
  auto name = slash == std::string::npos ? e.path : e.path.substr(slash + 1);
  if (e.path.empty() || e.path == ".")
    name = "user";
  const char* type = e.kind == file_kind::file        ? "FILE_TYPE_FILE"
                     : e.kind == file_kind::directory ? "FILE_TYPE_DIRECTORY"
                     : e.kind == file_kind::symlink   ? "FILE_TYPE_SYMLINK"
                                                      : "FILE_TYPE_UNSPECIFIED";
  auto mode = static_cast<uint32_t>(e.mode);
  if (e.kind == file_kind::directory)
    mode |= go_mode_dir;
  if (e.kind == file_kind::symlink)
    mode |= go_mode_symlink;
  return {{"name", name},
          {"type", type},
          {"path", e2b_path(e.path)},
          {"size", e.size},
          {"mode", mode},
          {"permissions", permissions(e)},
          {"owner", "user"},
          {"group", "user"},
          {"modifiedTime", rfc3339_ns(e.mtime_ns)}};
}

/// `key` of a Connect message as a workspace path; false (answered) when
/// it is missing or outside the home.
bool message_path(const json::object& msg, const char* key,
                  const http::responder& answer, std::string& rel) {
  auto* p = msg.if_contains(key);
  if (p == nullptr || !p->is_string()) {
    connect_fail(answer, {connect::code::invalid_argument,
                          std::string{key} + " is required"});
    return false;
  }
  auto w = workspace_path(p->as_string());
  if (!w) {
    connect_fail(answer, connect::from(w.error()));
    return false;
  }
  rel = std::move(*w);
  return true;
}

auto failing(const http::responder& answer) {
  return [answer](caf::error& err) {
    connect_fail(answer, connect::from(err));
  };
}

/// Answers {entry} of `rel` once the session described it.
void answer_entry(front_self self, const sandbox& sb, const std::string& rel,
                  const http::responder& answer) {
  call_session(
      self, sb.agent, sb.id, cmd::file_stat{{}, rel},
      [answer](file_entry& e) {
        connect_ok(answer, {{"entry", entry_info(e)}});
      },
      failing(answer));
}

// -- filesystem.Filesystem ----------------------------------------------------

/// ListDir {path, depth}: the pages of file.list, cut at `depth` levels.
void list_dir(front_self self, const sandbox& sb, std::string rel,
              int64_t depth, std::string cursor,
              std::shared_ptr<json::array> entries,
              const http::responder& answer) {
  cmd::file_list c{{}, rel, depth > 1, 10000, cursor};
  auto box = sb;
  call_session(
      self, sb.agent, sb.id, c,
      [self, box, rel, depth, entries, answer](dir_page& page) {
        auto base = rel.empty() ? 0 : rel.size() + 1;
        for (const auto& e : page.entries) {
          auto below = e.path.substr(std::min(base, e.path.size()));
          auto levels = 1 + std::count(below.begin(), below.end(), '/');
          if (levels <= depth)
            entries->emplace_back(entry_info(e));
        }
        if (page.has_more && page.next_cursor)
          return list_dir(self, box, rel, depth, *page.next_cursor, entries,
                          answer);
        connect_ok(answer, {{"entries", std::move(*entries)}});
      },
      failing(answer));
}

} // namespace

void serve_filesystem(front_self self, request& req, const sandbox& sb,
                      std::string_view method) {
  if (method == "WatchDir")
    return watch_dir(self, req, sb);
  if (method == "CreateWatcher" || method == "GetWatcherEvents" ||
      method == "RemoveWatcher")
    return serve_watcher(self, req, sb, method);
  auto msg = connect_body(req, false);
  if (!msg)
    return connect_fail(req.answer(), connect::from(msg.error()));
  auto answer = req.answer();
  std::string rel;
  if (method == "Stat") {
    if (message_path(*msg, "path", answer, rel))
      answer_entry(self, sb, rel, answer);
    return;
  }
  if (method == "MakeDir") {
    if (!message_path(*msg, "path", answer, rel))
      return;
    // A directory that exists is already_exists (the SDK's false); missing
    // parents are made.
    auto box = sb;
    call_session(
        self, sb.agent, sb.id, cmd::file_mkdir{{}, rel, false, "e2b"},
        [self, box, rel, answer](mkdir_result&) {
          answer_entry(self, box, rel, answer);
        },
        [self, box, rel, answer](caf::error& err) {
          if (code_of(err) != errc::not_found)
            return connect_fail(answer, connect::from(err));
          call_session(
              self, box.agent, box.id, cmd::file_mkdir{{}, rel, true, "e2b"},
              [self, box, rel, answer](mkdir_result&) {
                answer_entry(self, box, rel, answer);
              },
              failing(answer));
        });
    return;
  }
  if (method == "Move") {
    std::string to;
    if (!message_path(*msg, "source", answer, rel) ||
        !message_path(*msg, "destination", answer, to))
      return;
    auto box = sb;
    call_session(
        self, sb.agent, sb.id, cmd::file_move{{}, rel, to, false, "e2b"},
        [self, box, to, answer](move_result&) {
          answer_entry(self, box, to, answer);
        },
        failing(answer));
    return;
  }
  if (method == "ListDir") {
    if (!message_path(*msg, "path", answer, rel))
      return;
    int64_t depth = 1;
    if (auto* d = msg->if_contains("depth"); d != nullptr && d->is_int64())
      depth = d->as_int64();
    if (depth < 1)
      depth = 1;
    list_dir(self, sb, rel, depth, {}, std::make_shared<json::array>(), answer);
    return;
  }
  if (method == "Remove") {
    if (!message_path(*msg, "path", answer, rel))
      return;
    call_session(
        self, sb.agent, sb.id, cmd::file_remove{{}, rel, true, "e2b"},
        [answer](remove_result&) { connect_ok(answer, {}); }, failing(answer));
    return;
  }
  connect_fail(answer,
               {connect::code::unimplemented,
                "no such call: filesystem.Filesystem/" + std::string{method}});
}

// -- /files -------------------------------------------------------------------

namespace {

/// GET /files: the file's bytes, one answer when they fit a read, else
/// streamed read by read; deflated on the way when `gz` is set.
void read_file(front_self self, const sandbox& sb, std::string rel,
               int64_t offset, std::shared_ptr<gzip_writer> gz,
               const http::responder& answer) {
  cmd::file_read c{{}, rel, offset, cmd::max_file_chunk, false};
  auto box = sb;
  call_session(
      self, sb.agent, sb.id, c,
      [self, box, rel, offset, gz, answer](read_slice& s) {
        auto next = offset + static_cast<int64_t>(s.data.size());
        auto bytes = gz ? gz->write(s.data, s.eof) : std::move(s.data);
        if (offset == 0) {
          http::route_response head{
              200, "application/octet-stream", std::move(bytes), {}};
          if (gz)
            head.headers.emplace_back("Content-Encoding", "gzip");
          head.streaming = !s.eof;
          answer(std::move(head));
        } else {
          answer.more(std::move(bytes), s.eof);
        }
        if (!s.eof && answer.open())
          read_file(self, box, rel, next, gz, answer);
      },
      [offset, answer](caf::error& err) {
        if (offset == 0)
          return answer_error(answer, err);
        answer.more({}, true); // cut off: the client sees a short body
      });
}

/// Writes `data` to `rel` from `at` on, a file.write per chunk; then
/// `done`.
void write_chunks(front_self self, const sandbox& sb, std::string rel,
                  std::shared_ptr<std::string> data, size_t at,
                  std::function<void(caf::error)> done) {
  auto n = std::min<size_t>(data->size() - at, cmd::max_file_chunk);
  cmd::file_write c;
  c.path = rel;
  c.data = data->substr(at, n);
  c.append = at > 0;
  c.origin = "e2b";
  auto box = sb;
  call_session(
      self, sb.agent, sb.id, std::move(c),
      [self, box, rel, data, at, n, done](write_result&) {
        if (at + n < data->size())
          return write_chunks(self, box, rel, data, at + n, done);
        done(caf::none);
      },
      [done](caf::error& err) { done(err); });
}

/// Writes `data` to `rel`, whole or not at all: one chunk is one
/// file.write (temp file and rename); more go to a temp file beside it,
/// which then replaces `rel` in one rename, so a failure half way (a full
/// disk) or a crash leaves the old file as it was.
void write_file(front_self self, const sandbox& sb, std::string rel,
                std::shared_ptr<std::string> data,
                std::function<void(caf::error)> done) {
  if (data->size() <= cmd::max_file_chunk)
    return write_chunks(self, sb, rel, data, 0, done);
  auto slash = rel.rfind('/');
  auto tmp =
      (slash == std::string::npos ? std::string{} : rel.substr(0, slash + 1)) +
      ".e2b-upload-" + random_hex_token();
  auto box = sb;
  write_chunks(self, sb, tmp, data, 0, [=](caf::error err) {
    auto drop = [=](caf::error why) {
      call_session(
          self, box.agent, box.id, cmd::file_remove{{}, tmp, false, "e2b"},
          [done, why](remove_result&) { done(why); },
          [done, why](caf::error&) { done(why); });
    };
    if (err)
      return drop(err);
    cmd::file_move m;
    m.from = tmp;
    m.to = rel;
    m.replace = true;
    m.origin = "e2b";
    call_session(
        self, box.agent, box.id, m, [done](move_result&) { done(caf::none); },
        [drop](caf::error& failed) { drop(failed); });
  });
}

void make_parents(front_self self, const sandbox& sb, const std::string& rel,
                  std::function<void(caf::error)> then) {
  auto slash = rel.rfind('/');
  if (slash == std::string::npos)
    return then(caf::none);
  call_session(
      self, sb.agent, sb.id,
      cmd::file_mkdir{{}, rel.substr(0, slash), true, "e2b"},
      [then](mkdir_result&) { then(caf::none); },
      [then](caf::error& err) { then(err); });
}

struct upload {
  std::string rel;
  std::shared_ptr<std::string> data;
};

/// Writes the uploads one after the other; answers their entries.
void write_all(front_self self, const sandbox& sb,
               std::shared_ptr<std::vector<upload>> files, size_t i,
               std::shared_ptr<json::array> written,
               const http::responder& answer) {
  if (i == files->size()) {
    answer_json(answer, 200, *written);
    return;
  }
  auto box = sb;
  const auto& f = (*files)[i];
  auto rel = f.rel;
  auto data = f.data;
  make_parents(self, sb, rel, [=](caf::error err) {
    if (err)
      return answer_error(answer, err);
    write_file(self, box, rel, data, [=](caf::error failed) {
      if (failed)
        return answer_error(answer, failed);
      auto slash = rel.rfind('/');
      written->emplace_back(json::object{
          {"name", slash == std::string::npos ? rel : rel.substr(slash + 1)},
          {"type", "file"},
          {"path", e2b_path(rel)}});
      write_all(self, box, files, i + 1, written, answer);
    });
  });
}

} // namespace

void serve_files(front_self self, request& req, const sandbox& sb) {
  auto answer = req.answer();
  auto path = req.param("path");
  if (req.http().method() == bhttp::verb::get) {
    auto rel = workspace_path(path);
    if (path.empty())
      return answer_error(answer, 400, "path is required");
    if (!rel)
      return answer_error(answer, rel.error());
    std::shared_ptr<gzip_writer> gz;
    if (accepts_gzip(req.header("Accept-Encoding")))
      gz = std::make_shared<gzip_writer>();
    return read_file(self, sb, *rel, 0, std::move(gz), answer);
  }
  if (req.http().method() != bhttp::verb::post)
    return answer_error(answer, 405, "/files takes GET and POST");
  // A gzip body is inflated whole, within the upload limit (a small body
  // that inflates past it is refused, not written in part).
  std::string inflated;
  const std::string* raw = &req.http().body();
  auto encoding = req.header("Content-Encoding");
  if (!encoding.empty() && encoding != "identity") {
    if (encoding != "gzip")
      return answer_error(answer, 415,
                          "Content-Encoding " + encoding +
                              " is not accepted: send gzip or the bytes as "
                              "they are");
    auto plain = gunzip(*raw, max_files_body);
    if (!plain)
      return answer_error(answer, plain.error());
    inflated = std::move(*plain);
    raw = &inflated;
  }
  const auto& body = *raw;
  auto files = std::make_shared<std::vector<upload>>();
  auto type = req.header("Content-Type");
  if (type.rfind("application/octet-stream", 0) == 0) {
    auto rel = workspace_path(path);
    if (path.empty())
      return answer_error(answer, 400, "path is required");
    if (!rel)
      return answer_error(answer, rel.error());
    files->push_back({*rel, std::make_shared<std::string>(body)});
  } else {
    auto boundary = form_boundary(type);
    if (!boundary)
      return answer_error(answer, boundary.error());
    auto parts = parse_form(body, *boundary);
    if (!parts)
      return answer_error(answer, parts.error());
    for (const auto& part : *parts) {
      // One file: the query's path; several: each part's filename.
      auto dest = parts->size() == 1 && !path.empty() ? path : part.filename;
      if (dest.empty())
        return answer_error(answer, 400,
                            "a part names no file (filename) and the query "
                            "no path");
      auto rel = workspace_path(dest);
      if (!rel)
        return answer_error(answer, rel.error());
      files->push_back({*rel, std::make_shared<std::string>(part.data.data(),
                                                            part.data.size())});
    }
    if (files->empty())
      return answer_error(answer, 400, "the body holds no file");
  }
  write_all(self, sb, files, 0, std::make_shared<json::array>(), answer);
}

} // namespace allox::e2b
