// SPDX-License-Identifier: Apache-2.0
// alloxctl file upload and download: one file as one streamed PUT or GET
// of /v1/files/..., a tree as one tar stream (cli/tarball.hpp), and
// file.write / file.read in base64 chunks for merges into an existing
// directory and for a daemon without bulk transfer.
#include "cli/commands.hpp"
#include "cli/tarball.hpp"

#include <CLI/CLI.hpp>
#include <boost/beast/core/detail/base64.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

namespace allox::ctl {

namespace {

namespace b64 = boost::beast::detail::base64;

// -- files
// ---------------------------------------------------------------------

/// Regular files under `local` (itself, or with `recursive` everything
/// below it), as (local path, path relative to `local`).
result<std::vector<std::pair<std::string, std::string>>>
local_files(const std::string& local, bool recursive) {
  std::vector<std::pair<std::string, std::string>> out;
  struct stat s {};
  if (::stat(local.c_str(), &s) != 0)
    return usage_error("cannot read " + local);
  if (!S_ISDIR(s.st_mode)) {
    out.emplace_back(local, "");
    return out;
  }
  if (!recursive)
    return usage_error(local + " is a directory: use --recursive");
  std::vector<std::string> todo{""};
  while (!todo.empty()) {
    auto rel = todo.back();
    todo.pop_back();
    auto dir = rel.empty() ? local : local + "/" + rel;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr)
      return usage_error("cannot read " + dir);
    while (auto* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..")
        continue;
      auto child = rel.empty() ? name : rel + "/" + name;
      struct stat cs {};
      if (::lstat((local + "/" + child).c_str(), &cs) != 0)
        continue;
      if (S_ISDIR(cs.st_mode))
        todo.push_back(child);
      else if (S_ISREG(cs.st_mode))
        out.emplace_back(local + "/" + child, child);
    }
    ::closedir(d);
  }
  return out;
}

std::string encode(const std::string& bytes) {
  std::string out(b64::encoded_size(bytes.size()), '\0');
  out.resize(b64::encode(out.data(), bytes.data(), bytes.size()));
  return out;
}

std::string decode(const std::string& text) {
  std::string out(b64::decoded_size(text.size()), '\0');
  out.resize(b64::decode(out.data(), text.data(), text.size()).first);
  return out;
}

struct transfer_args {
  std::string from;
  std::string to;
  /// The second positional (scp's form), the same as --path / --to.
  std::string target;
  bool recursive = false;
};

std::string base_name(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

/// Where one file goes: `to` (the default: the source's name); a `to`
/// ending in '/', or a local directory that exists, takes the source's
/// name inside it, as cp and scp do.
std::string destination(const std::string& from, const std::string& to,
                        bool local_dir) {
  if (to.empty())
    return base_name(from);
  std::error_code ec;
  if (to.back() == '/' || (local_dir && std::filesystem::is_directory(to, ec)))
    return (to.back() == '/' ? to : to + "/") + base_name(from);
  return to;
}

/// The bulk-transfer URL of a workspace path (PUT/GET /v1/files/...),
/// each byte outside the unreserved set percent-encoded.
std::string files_target(const json::object& params, const std::string& path) {
  auto enc = [](const std::string& s, bool keep_slash) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char ch : s) {
      if (std::isalnum(ch) || std::strchr("-._~@", ch) != nullptr ||
          (keep_slash && ch == '/')) {
        out += static_cast<char>(ch);
      } else {
        out += '%';
        out += hex[ch >> 4];
        out += hex[ch & 15];
      }
    }
    return out;
  };
  return "/v1/files/" + enc(cell(params.at("agent_id")), false) + "/" +
         enc(cell(params.at("session_id")), false) + "/" + enc(path, true);
}

/// One file through the bulk endpoint: done (true), or the daemon does
/// not have it (404: an older daemon) and the caller falls back to file.*.
result<bool> bulk_file(client& daemon, const json::object& params, bool upload,
                       const std::string& remote, const std::string& local) {
  auto target = files_target(params, remote);
  auto reply =
      upload ? daemon.put_file(target, local) : daemon.get_file(target, local);
  if (!reply)
    return reply.error();
  if (reply->status == 404)
    return false;
  if (reply->status != 200)
    return daemon_failure(upload ? "the upload" : "the download", *reply);
  return true;
}

/// A temporary local file, removed with this object.
struct temp_file {
  std::string path;
  temp_file() {
    auto dir = std::filesystem::temp_directory_path().string();
    std::string tmpl = dir + "/alloxctl-XXXXXX";
    int fd = ::mkstemp(tmpl.data());
    if (fd >= 0) {
      ::close(fd);
      path = tmpl;
    }
  }
  ~temp_file() {
    if (!path.empty())
      ::unlink(path.c_str());
  }
  temp_file(const temp_file&) = delete;
  temp_file& operator=(const temp_file&) = delete;
};

/// A local directory into a new remote one as one tar stream (PUT with
/// `application/x-tar`): the remote paths of its files, or nothing when
/// the remote directory exists already (files are then merged into it one
/// by one) or the daemon has no bulk endpoint.
result<std::optional<std::vector<std::string>>>
upload_tree(client& daemon, const json::object& params,
            const std::string& local, const std::string& remote) {
  json::object stat = params;
  stat["path"] = remote;
  if (auto r = daemon.rpc("file.stat", stat);
      r || r.error().code != "not_found")
    return std::optional<std::vector<std::string>>{};
  temp_file tar;
  if (tar.path.empty())
    return usage_error("cannot create a temporary file");
  auto files = pack_tree(local, tar.path);
  if (!files)
    return files.error();
  auto reply = daemon.put_file(files_target(params, remote), tar.path,
                               "application/x-tar");
  if (!reply)
    return reply.error();
  if (reply->status == 404)
    return std::optional<std::vector<std::string>>{};
  if (reply->status != 200)
    return daemon_failure("the upload", *reply);
  for (auto& f : *files)
    f = remote + "/" + f;
  return std::optional<std::vector<std::string>>{std::move(*files)};
}

/// A remote directory as one tar stream (GET), unpacked into `local`: the
/// local paths of its files, or nothing when the daemon has no bulk
/// endpoint. A remote file is saved at `local` itself.
result<std::optional<std::vector<std::string>>>
download_tree(client& daemon, const json::object& params,
              const std::string& remote, const std::string& local) {
  temp_file tar;
  if (tar.path.empty())
    return usage_error("cannot create a temporary file");
  auto reply = daemon.get_file(files_target(params, remote), tar.path);
  if (!reply)
    return reply.error();
  if (reply->status == 404) // an older daemon: file by file
    return std::optional<std::vector<std::string>>{};
  if (reply->status != 200)
    return daemon_failure("the download", *reply);
  auto type = reply->headers.find("Content-Type");
  if (type == reply->headers.end() ||
      type->second.find("application/x-tar") == std::string::npos) {
    std::error_code ec;
    std::filesystem::copy_file(
        tar.path, local, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec)
      return usage_error("cannot write " + local + ": " + ec.message());
    return std::optional<std::vector<std::string>>{{local}};
  }
  auto files = unpack_tree(tar.path, local);
  if (!files)
    return files.error();
  return std::optional<std::vector<std::string>>{std::move(*files)};
}

int upload_command(app_state& st, const transfer_args& a) {
  auto target = st.session_call();
  if (!target)
    return report(target.error());
  auto& [params, daemon] = *target;
  auto files = local_files(a.from, a.recursive);
  if (!files)
    return report(files.error());
  bool one_file = files->size() == 1 && (*files)[0].second.empty();
  auto base = one_file       ? destination(a.from, a.to, false)
              : a.to.empty() ? base_name(a.from)
                             : a.to;
  // One file goes as one streamed PUT (any size, no base64).
  if (one_file) {
    auto done = bulk_file(*daemon, params, true, base, (*files)[0].first);
    if (!done)
      return report(done.error());
    if (*done) {
      json::object result{{"uploaded", json::array{json::value(base)}}};
      print_result(*st.out, st.st, result,
                   [&] { view_generic(result, *st.out, st.st); });
      return exit_ok;
    }
  }
  // A directory into a new remote one: one tar stream.
  if (a.recursive && !(files->size() == 1 && (*files)[0].second.empty())) {
    auto tree = upload_tree(*daemon, params, a.from, base);
    if (!tree)
      return report(tree.error());
    if (*tree) {
      json::array sent;
      for (auto& f : **tree)
        sent.emplace_back(f);
      json::object result{{"uploaded", std::move(sent)}};
      print_result(*st.out, st.st, result,
                   [&] { view_generic(result, *st.out, st.st); });
      return exit_ok;
    }
  }
  json::array written;
  progress p{st.st};
  std::set<std::string> made;
  // Chunks stay well below the daemon's 1 MiB body once base64-encoded.
  constexpr size_t chunk = 512 * 1024;
  for (size_t i = 0; i < files->size(); ++i) {
    const auto& [local, rel] = (*files)[i];
    auto remote = rel.empty() ? base : base + "/" + rel;
    p.update("uploading " + std::to_string(i + 1) + "/" +
             std::to_string(files->size()) + " " + remote);
    if (auto slash = remote.rfind('/'); slash != std::string::npos) {
      auto dir = remote.substr(0, slash);
      if (made.insert(dir).second) {
        json::object mk = params;
        mk["path"] = dir;
        mk["parents"] = true;
        if (auto r = daemon->rpc("file.mkdir", mk); !r)
          return report(r.error());
      }
    }
    std::ifstream in{local, std::ios::binary};
    std::stringstream bytes;
    bytes << in.rdbuf();
    auto all = bytes.str();
    for (size_t off = 0; off == 0 || off < all.size(); off += chunk) {
      json::object call = params;
      call["path"] = remote;
      call["data"] = encode(all.substr(off, chunk));
      call["encoding"] = "base64";
      call["append"] = off > 0;
      if (auto r = daemon->rpc("file.write", call); !r)
        return report(r.error());
    }
    written.emplace_back(remote);
  }
  p.clear();
  json::object result{{"uploaded", std::move(written)}};
  print_result(*st.out, st.st, result,
               [&] { view_generic(result, *st.out, st.st); });
  return exit_ok;
}

int download_command(app_state& st, const transfer_args& a) {
  auto target = st.session_call();
  if (!target)
    return report(target.error());
  auto& [params, daemon] = *target;
  std::vector<std::string> remote{a.from};
  // A tree comes as one tar stream.
  if (a.recursive) {
    auto local = a.to.empty() ? a.from.substr(a.from.rfind('/') + 1) : a.to;
    auto tree = download_tree(*daemon, params, a.from, local);
    if (!tree)
      return report(tree.error());
    if (*tree) {
      json::array saved;
      for (auto& f : **tree)
        saved.emplace_back(f);
      json::object result{{"downloaded", std::move(saved)}};
      print_result(*st.out, st.st, result,
                   [&] { view_generic(result, *st.out, st.st); });
      return exit_ok;
    }
  }
  if (a.recursive) {
    json::object call = params;
    call["path"] = a.from;
    call["recursive"] = true;
    remote.clear();
    for (;;) {
      auto listing = daemon->rpc("file.list", call);
      if (!listing)
        return report(listing.error());
      for (const auto& e : listing->at("entries").as_array())
        if (cell(e.at("type")) == "file")
          remote.push_back(cell(e.at("path")));
      if (!listing->at("has_more").as_bool())
        break;
      call["cursor"] = listing->at("next_cursor");
    }
  }
  auto base = a.recursive ? (a.to.empty() ? base_name(a.from) : a.to)
                          : destination(a.from, a.to, true);
  // One file comes as one streamed GET.
  if (!a.recursive) {
    if (auto parent = std::filesystem::path{base}.parent_path();
        !parent.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(parent, ec);
    }
    auto done = bulk_file(*daemon, params, false, a.from, base);
    if (!done)
      return report(done.error());
    if (*done) {
      json::object result{{"downloaded", json::array{json::value(base)}}};
      print_result(*st.out, st.st, result,
                   [&] { view_generic(result, *st.out, st.st); });
      return exit_ok;
    }
  }
  json::array saved;
  progress p{st.st};
  for (size_t i = 0; i < remote.size(); ++i) {
    p.update("downloading " + std::to_string(i + 1) + "/" +
             std::to_string(remote.size()) + " " + remote[i]);
    json::object call = params;
    call["path"] = remote[i];
    call["encoding"] = "base64";
    auto local = remote.size() == 1 && !a.recursive
                     ? base
                     : base + "/" + remote[i].substr(a.from.size());
    if (auto parent = std::filesystem::path{local}.parent_path();
        !parent.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(parent, ec);
    }
    std::ofstream out{local, std::ios::binary | std::ios::trunc};
    // A read returns at most 1 MiB: follow the offsets to the end.
    for (int64_t offset = 0;;) {
      call["offset"] = offset;
      auto r = daemon->rpc("file.read", call);
      if (!r)
        return report(r.error());
      auto data = decode(cell(r->at("data")));
      out << data;
      offset += static_cast<int64_t>(data.size());
      if (r->at("eof").as_bool() || data.empty())
        break;
    }
    saved.emplace_back(local);
  }
  p.clear();
  json::object result{{"downloaded", std::move(saved)}};
  print_result(*st.out, st.st, result,
               [&] { view_generic(result, *st.out, st.st); });
  return exit_ok;
}

} // namespace

void add_file_commands(CLI::App& app, app_state& st,
                       std::function<int()>* run) {
  static transfer_args up;
  auto* u = subcommand(app, {"file", "upload"},
                       "copy a local file or tree into the workspace "
                       "(file.write)");
  u->add_option("LOCAL", up.from, "local file or directory")->required();
  auto* path_opt = u->add_option("--path", up.to, "where in the workspace");
  u->add_option("REMOTE", up.target,
                "where in the workspace (the same as --path)")
      ->excludes(path_opt);
  u->add_flag("-r,--recursive", up.recursive, "a whole directory");
  u->callback([&st, run] {
    if (!up.target.empty())
      up.to = up.target;
    *run = [&st] {
      return upload_command(st, up);
    };
  });

  static transfer_args down;
  auto* d = subcommand(app, {"file", "download"},
                       "copy a file or tree out of the workspace "
                       "(file.read)");
  d->add_option("REMOTE", down.from, "path in the workspace")->required();
  auto* to_opt = d->add_option("--to", down.to, "local destination");
  d->add_option("LOCAL", down.target, "local destination (the same as --to)")
      ->excludes(to_opt);
  d->add_flag("-r,--recursive", down.recursive, "a whole directory");
  d->callback([&st, run] {
    if (!down.target.empty())
      down.to = down.target;
    *run = [&st] {
      return download_command(st, down);
    };
  });
}

} // namespace allox::ctl
