// Reconciliation logic on plain directories (it never needs a subvolume to
// decide; the Btrfs paths are covered by the integration tests).
#include "guest/store/reconcile.hpp"

#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

using namespace allox;

namespace {

void mkdirs(const std::string& path) {
  std::string cur;
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = path.find('/', pos + 1);
    ::mkdir(path.substr(0, pos).c_str(), 0755);
  }
}

void make_session(const store::layout& l, const std::string& a,
                  const std::string& s) {
  mkdirs(l.current(a, s));
  mkdirs(l.agent_shared(a));
}

bool exists(const std::string& p) {
  struct stat st{};
  return ::lstat(p.c_str(), &st) == 0;
}

std::vector<std::string> strings(const json::value& v) {
  std::vector<std::string> out;
  for (const auto& x : v.as_array())
    out.emplace_back(x.as_string());
  return out;
}

} // namespace

TEST_CASE("reconcile: adopts workspaces without rows, forgets rows without "
          "workspaces") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s1");
  make_session(l, "a", "s2");
  catalog_snapshot rows;
  rows.agents.push_back({"a", 5, false});
  rows.agents.push_back({"gone", 5, false});
  rows.sessions.push_back({"a", "s1", 6, false, {}});
  rows.sessions.push_back({"a", "lost", 6, false, {}});
  auto r = store::reconcile(l, rows);
  REQUIRE(r);
  CHECK(strings(r->summary.at("adopted_sessions"))
        == std::vector<std::string>{"a/s2"});
  CHECK(strings(r->summary.at("forgotten"))
        == std::vector<std::string>{"gone", "a/lost"});
  CHECK(r->sessions.size() == 2);
  CHECK(r->agents.size() == 1);
  CHECK(exists(l.current("a", "s2") + "/.allox-tmp"));
  bool audited = false;
  for (const auto& e : r->changes.audit)
    audited |= e.op == "session.adopt" && e.session_id == "s2";
  CHECK(audited);
}

TEST_CASE("reconcile: finishes interrupted deletions and purges trash") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "doomed");
  make_session(l, "a", "kept");
  make_session(l, "b", "s");
  mkdirs(l.sessions_dir("a") + "/.trash-0123");
  mkdirs(l.agents_dir() + "/.trash-4567/x");
  catalog_snapshot rows;
  rows.agents.push_back({"a", 1, false});
  rows.agents.push_back({"b", 1, true});
  rows.sessions.push_back({"a", "doomed", 1, true, {}});
  rows.sessions.push_back({"a", "kept", 1, false, {}});
  rows.sessions.push_back({"b", "s", 1, false, {}});
  auto r = store::reconcile(l, rows);
  REQUIRE(r);
  CHECK_FALSE(exists(l.session_dir("a", "doomed")));
  CHECK_FALSE(exists(l.agent_dir("b")));
  CHECK_FALSE(exists(l.sessions_dir("a") + "/.trash-0123"));
  CHECK_FALSE(exists(l.agents_dir() + "/.trash-4567"));
  CHECK(exists(l.current("a", "kept")));
  REQUIRE(r->sessions.size() == 1);
  CHECK(r->sessions[0].session_id == "kept");
  CHECK(strings(r->summary.at("finished_deletions"))
        == std::vector<std::string>{"b", "a/doomed"});
}

TEST_CASE("reconcile: ignores names that are not ids and symlinks") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s");
  mkdirs(l.sessions_dir("a") + "/bad name/current");
  ::symlink("/etc", (l.sessions_dir("a") + "/link").c_str());
  auto r = store::reconcile(l, {});
  REQUIRE(r);
  CHECK(strings(r->summary.at("adopted_sessions"))
        == std::vector<std::string>{"a/s"});
}
