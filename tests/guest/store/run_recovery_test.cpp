// Run rows on disk: the per-session writer that keeps the newest row of a
// run when a write at shutdown races a save still in flight.
#include "guest/store/run_recovery.hpp"

#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace allox;

namespace {

json::object row(uint64_t revision) {
  // Rows of different lengths, so that two writers sharing one temp file
  // would leave a torn document behind.
  return json::object{{"run_id", "r1"},
                      {"state", revision % 2 ? "running" : "stopped"},
                      {"revision", revision},
                      {"padding", std::string(revision % 7 * 40, 'x')}};
}

} // namespace

TEST_CASE("run rows: an older row never replaces a newer one") {
  test::temp_dir dir;
  store::run_row_writer writer;
  auto older = writer.stamp();
  auto newer = writer.stamp();
  REQUIRE_FALSE(writer.write(dir.path(), row(2), newer));
  REQUIRE_FALSE(writer.write(dir.path(), row(1), older));
  auto back = store::read_run_row(dir.path());
  REQUIRE(back);
  CHECK(back->at("revision") == 2);
}

TEST_CASE("run rows: concurrent writers leave the newest whole row") {
  test::temp_dir dir;
  store::run_row_writer writer;
  std::vector<uint64_t> stamps;
  for (int i = 0; i < 200; ++i)
    stamps.push_back(writer.stamp());
  // Writers finish in any order, as a queued save and the write at
  // shutdown do.
  std::shuffle(stamps.begin(), stamps.end(), std::mt19937{42});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = t; i < stamps.size(); i += 4)
        CHECK_FALSE(writer.write(dir.path(), row(stamps[i]), stamps[i]));
    });
  for (auto& t : threads)
    t.join();
  auto back = store::read_run_row(dir.path());
  REQUIRE(back);
  CHECK(back->at("revision") == 200);
  CHECK(back->at("state") == "stopped");
}

TEST_CASE("run rows: a missing row is not_found, a torn one is internal") {
  test::temp_dir dir;
  auto missing = store::read_run_row(dir.path());
  REQUIRE_FALSE(missing);
  CHECK(code_of(missing.error()) == errc::not_found);
  REQUIRE_FALSE(store::write_run_row(dir.path(), row(3)));
  std::filesystem::resize_file(dir.path() + "/state.json", 10);
  auto torn = store::read_run_row(dir.path());
  REQUIRE_FALSE(torn);
  CHECK(code_of(torn.error()) == errc::internal);
}
