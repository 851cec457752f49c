// SPDX-License-Identifier: Apache-2.0
// envd's filesystem.Filesystem service and /files over a sandbox's
// workspace: E2B's paths (absolute under /home/user, or relative to it)
// become the session's file.* commands, which resolve every path beneath
// the workspace (guest/os/workspace_files.hpp): `..` and symlinks out of
// it are refused by the kernel, not by string checks here.
#include "fronts/e2b/handlers.hpp"

#include "guest/http/form_data.hpp"
#include "guest/http/gzip.hpp"
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
//
// /files streams: the transport moves the body to (or the file from) the
// workspace through the bulk transfer path, as PUT/GET /v1/files/ do, so a
// file of any size passes through a buffer of about one read. This front
// only checks the request and says how the bytes are coded (a plan).

namespace {

/// The body's coding; an error answer for one we do not take.
bool body_coding(request& req, http::transfer_plan& plan) {
  auto encoding = req.header("Content-Encoding");
  if (encoding.empty() || encoding == "identity")
    return true;
  if (encoding == "gzip") {
    plan.gunzip = true;
    return true;
  }
  answer_error(req.answer(), 415,
               "Content-Encoding " + encoding +
                   " is not accepted: send gzip or the bytes as they are");
  return false;
}

} // namespace

http::route_response files_written(const json::object& result) {
  json::array written;
  for (const auto& f : result.at("files").as_array()) {
    auto rel = std::string{f.as_object().at("path").as_string()};
    auto slash = rel.rfind('/');
    written.emplace_back(json::object{
        {"name", slash == std::string::npos ? rel : rel.substr(slash + 1)},
        {"type", "file"},
        {"path", e2b_path(rel)}});
  }
  return {200, "application/json", json::serialize(written), {}};
}

void serve_files(front_self, request& req, const sandbox& sb) {
  auto answer = req.answer();
  auto path = req.param("path");
  http::transfer_plan plan;
  plan.agent_id = sb.agent;
  plan.session_id = sb.id;
  plan.origin = "e2b";
  plan.failed = [](const caf::error& err) {
    return error_response(err);
  };
  auto method = req.http().method();
  if (method == bhttp::verb::get) {
    auto rel = workspace_path(path);
    if (path.empty())
      return answer_error(answer, 400, "path is required");
    if (!rel)
      return answer_error(answer, rel.error());
    plan.path = std::move(*rel);
    plan.gzip = http::accepts_gzip(req.header("Accept-Encoding"));
    return answer.begin(std::move(plan));
  }
  if (method != bhttp::verb::post)
    return answer_error(answer, 405, "/files takes GET and POST");
  if (!body_coding(req, plan))
    return;
  plan.upload = true;
  plan.make_parents = true;
  plan.done = files_written;
  auto type = req.header("Content-Type");
  if (type.rfind("application/octet-stream", 0) == 0) {
    auto rel = workspace_path(path);
    if (path.empty())
      return answer_error(answer, 400, "path is required");
    if (!rel)
      return answer_error(answer, rel.error());
    plan.path = std::move(*rel);
    return answer.begin(std::move(plan));
  }
  auto boundary = http::form_boundary(type);
  if (!boundary)
    return answer_error(answer, boundary.error());
  plan.form_boundary = std::move(*boundary);
  // Each part is a file: the query's path when it names one (a signed URL
  // writes the path it signs, whatever the part says), else the part's
  // filename.
  plan.part_path = [path](std::string_view filename) -> expected<std::string> {
    auto dest = path.empty() ? std::string{filename} : path;
    if (dest.empty())
      return make_error(errc::invalid_argument,
                        "a part names no file (filename) and the query no "
                        "path");
    auto rel = workspace_path(dest);
    if (rel && rel->empty())
      return make_error(errc::invalid_argument,
                        "a part's path names the home directory, not a file");
    return rel;
  };
  answer.begin(std::move(plan));
}

} // namespace allox::e2b
