#include "guest/store/run_recovery.hpp"

#include "guest/log.hpp"
#include "guest/os/fs.hpp"
#include "messages/json.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace allox::store {

expected<json::object> read_run_row(const std::string& dir) {
  auto path = dir + "/state.json";
  std::ifstream in{path};
  if (!in)
    return make_error(errc::not_found, "unknown run");
  std::stringstream ss;
  ss << in.rdbuf();
  boost::system::error_code ec;
  auto v = json::parse(ss.str(), ec);
  if (ec || !v.is_object())
    return make_error(errc::internal, "unreadable run state " + path);
  return std::move(v.as_object());
}

caf::error write_run_row(const std::string& dir, const json::object& row) {
  auto tmp = dir + "/state.tmp";
  {
    std::ofstream out{tmp, std::ios::trunc};
    out << json::serialize(row) << '\n';
    if (!out)
      return make_error(errc::internal, "cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), (dir + "/state.json").c_str()) != 0)
    return make_error(errc::internal, "cannot replace " + dir + "/state.json");
  return caf::none;
}

caf::error run_row_writer::write(const std::string& dir,
                                 const json::object& row, uint64_t stamp) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto& last = written_[dir];
  if (stamp <= last)
    return caf::none; // a newer row is already there
  if (auto err = write_run_row(dir, row))
    return err;
  last = stamp;
  return caf::none;
}

expected<fenced_runs> recover_runs(const std::string& audit_root) {
  fenced_runs fenced;
  auto names = os::list_dir(audit_root);
  if (!names)
    return fenced;
  for (const auto& id : *names) {
    auto dir = audit_root + "/" + id;
    auto row = read_run_row(dir);
    if (!row) {
      if (code_of(row.error()) != errc::not_found)
        log::warn("runs", message_of(row.error()) + "; run " + id +
                              " cannot fence its session");
      continue;
    }
    auto& r = *row;
    auto state = r.at("state");
    bool live = state == "starting" || state == "running";
    bool fencing = live || (r.contains("session_fenced") &&
                            r.at("session_fenced") == true);
    if (!fencing)
      continue;
    if (live) {
      r["state"] = "interrupted";
      r["session_fenced"] = true;
      r["trace_complete"] = false;
      r["lifecycle_complete"] = false;
      if (auto* procs = r.if_contains("processes"); procs && procs->is_object())
        for (auto& kv : procs->as_object())
          if (kv.value().is_object())
            kv.value().as_object()["alive"] = nullptr;
      if (auto err = write_run_row(dir, r))
        return err;
      log::warn("runs", "run " + id +
                            " was interrupted by a daemon restart; "
                            "its session stays fenced until session.unfence");
    }
    fenced[{std::string{r.at("agent_id").as_string()},
            std::string{r.at("session_id").as_string()}}]
        .push_back(id);
  }
  return fenced;
}

caf::error release_run(const std::string& audit_root, const std::string& id) {
  auto dir = audit_root + "/" + id;
  auto row = read_run_row(dir);
  if (!row)
    return row.error();
  (*row)["session_fenced"] = false;
  return write_run_row(dir, *row);
}

} // namespace allox::store
