// SPDX-License-Identifier: Apache-2.0
// The test runner: doctest's own main, plus one rule. CTest runs each test
// case by name (--test-case=...), and a name it cannot pass through intact
// (CMake splits lists at ';') would select nothing and pass silently; a
// filter that selects no test case fails instead.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string_view>

namespace {

unsigned selected_test_cases = 0;

/// Remembers how many test cases passed the filters.
struct selection_listener : doctest::IReporter {
  explicit selection_listener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    selected_test_cases = stats.numTestCasesPassingFilters;
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("selection", 1, selection_listener);

bool selects_test_cases(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.rfind("--test-case=", 0) == 0 || arg.rfind("-tc=", 0) == 0)
      return true;
  }
  return false;
}

} // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  int rc = context.run();
  if (context.shouldExit())
    return rc;
  if (rc == 0 && selects_test_cases(argc, argv) && selected_test_cases == 0) {
    std::fprintf(stderr, "no test case matches the --test-case filter\n");
    return 1;
  }
  return rc;
}
