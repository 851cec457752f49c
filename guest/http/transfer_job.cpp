// SPDX-License-Identifier: Apache-2.0
#include "guest/http/transfer_job.hpp"

#include "guest/http/form_data.hpp"
#include "guest/http/gzip.hpp"
#include "guest/os/workspace_tar.hpp"
#include "guest/store/upload_marks.hpp"

#include <unistd.h>

#include <thread>
#include <utility>

namespace allox::http {

namespace {

/// Writes one file of an upload from `pull`, marked for start-up's
/// clean-up while it is under way.
expected<json::object> receive_one(const transfer_job& job,
                                   const os::workspace_root& root,
                                   const std::string& rel, os::pull_fn pull) {
  if (job.make_parents)
    if (auto slash = rel.rfind('/'); slash != std::string::npos)
      if (auto err = os::make_dir(root, rel.substr(0, slash), true);
          err && code_of(err) != errc::already_exists)
        return err;
  auto mark = store::mark_upload(job.marks, job.shared, rel);
  if (!mark)
    return mark.error();
  auto r = os::receive_file(root, rel, std::move(pull));
  store::unmark_upload(*mark);
  return r;
}

json::object named_file(const std::string& rel, const json::object& written) {
  return json::object{{"path", rel}, {"size", written.at("size")}};
}

/// An upload: the body's one file, its tar, or its form's parts.
expected<json::object> receive(const transfer_job& job,
                               const os::workspace_root& root,
                               os::pull_fn body) {
  if (job.gunzip) {
    auto inflated =
        std::make_shared<gunzip_source>(std::move(body), job.max_bytes);
    body = [inflated](std::string_view& bytes) {
      return inflated->pull(bytes);
    };
  }
  if (job.tar) {
    os::tar_limits limits;
    limits.max_bytes = job.max_bytes;
    auto mark = store::mark_upload(job.marks, job.shared, job.rel);
    if (!mark)
      return mark.error();
    auto r = os::receive_tar(root, job.rel, body, limits);
    store::unmark_upload(*mark);
    return r;
  }
  if (job.form_boundary.empty()) {
    auto r = receive_one(job, root, job.rel, std::move(body));
    if (r && job.name_files)
      (*r)["files"] = json::array{named_file(job.rel, *r)};
    return r;
  }
  form_reader form{std::move(body), job.form_boundary};
  json::array files;
  int64_t total = 0;
  for (;;) {
    auto part = form.next();
    if (!part)
      return part.error();
    if (!*part)
      break;
    auto name = job.part_path((*part)->filename);
    if (!name)
      return name.error();
    auto rel = job.rel.empty() ? *name : job.rel + "/" + *name;
    auto r = receive_one(job, root, rel, [&form](std::string_view& bytes) {
      return form.pull(bytes);
    });
    if (!r)
      return r.error();
    total += r->at("size").as_int64();
    files.emplace_back(named_file(rel, *r));
  }
  if (files.empty())
    return make_error(errc::invalid_argument, "the body holds no file");
  return json::object{{"files", std::move(files)}, {"size", total}};
}

/// A regular file's bytes deflated, read by read.
caf::error send_gzip(int fd,
                     const std::function<caf::error(std::string)>& push) {
  gzip_writer gz;
  std::string buf(os::transfer_chunk, '\0');
  for (off_t at = 0;;) {
    auto n = ::pread(fd, buf.data(), buf.size(), at);
    if (n < 0)
      return sys_error("pread");
    at += n;
    auto out =
        gz.write(std::string_view{buf.data(), static_cast<size_t>(n)}, n == 0);
    if (!out.empty())
      if (auto err = push(std::move(out)))
        return err;
    if (n == 0)
      return caf::none;
  }
}

/// A download: a directory as tar, a file deflated, or a file as it is
/// (sendfile to the socket the loop hands over).
expected<json::object> send(const std::shared_ptr<transfer_channel>& ch,
                            const transfer_job& job,
                            const os::workspace_root& root) {
  auto push = [&ch](std::string c) {
    return ch->push(std::move(c));
  };
  auto src = os::open_download(root, job.rel);
  if (src && src->directory && !job.directories)
    src = make_error(errc::invalid_argument,
                     "path " + job.rel + " is a directory");
  if (!src) {
    ch->opened(src.error());
    return src.error();
  }
  bool gzip =
      job.gzip && !src->directory && http::worth_gzip(src->fd.get(), src->size);
  ch->opened(json::object{{"directory", src->directory},
                          {"size", static_cast<int64_t>(src->size)},
                          {"gzip", gzip}});
  if (src->directory)
    return os::send_tar(src->fd.get(), push, os::tar_limits{}.max_depth);
  if (gzip) {
    if (auto err = send_gzip(src->fd.get(), push))
      return err;
    return json::object{{"size", static_cast<int64_t>(src->size)}};
  }
  // A regular file goes from the page cache to the socket: the loop
  // hands it over once the head may go.
  auto out = ch->await_socket();
  if (!out)
    return make_error(errc::invalid_argument, "the client went away");
  auto err = os::send_file(
      src->fd.get(), src->size, out->socket.get(), out->head,
      [&ch] { return !ch->cancelled(); }, [&ch] { ch->moved(); });
  if (err)
    return err;
  return json::object{{"size", static_cast<int64_t>(src->size)}};
}

} // namespace

void run_transfer_job(std::shared_ptr<transfer_channel> ch, transfer_job job) {
  std::thread{[ch = std::move(ch), job = std::move(job)] {
    auto work = [&]() -> expected<json::object> {
      auto root = os::workspace_root::open(job.root);
      if (!root)
        return root.error();
      if (job.upload)
        return receive(job, *root,
                       [&ch](std::string_view& c) { return ch->pull(c); });
      return send(ch, job, *root);
    };
    try {
      ch->finish(work());
    } catch (const std::exception& e) {
      ch->finish(make_error(errc::internal, e.what()));
    }
  }}.detach();
}

} // namespace allox::http
