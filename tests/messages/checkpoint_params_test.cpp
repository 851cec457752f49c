// SPDX-License-Identifier: Apache-2.0
#include "messages/checkpoint_params.hpp"
#include "tests/fixtures/json_text.hpp"

#include <doctest/doctest.h>

using namespace allox;
using allox::test::obj;
using namespace std::string_literals;

namespace {

std::string error_of(const caf::error& e) {
  return message_of(e);
}

} // namespace

TEST_CASE("checkpoint.create params") {
  auto ok = params::decode_checkpoint_create(
      obj(R"({"checkpoint_id":"c1","message":"m","metadata":{"k":[1]},)"
          R"("pinned":true,"origin":"o"})"));
  REQUIRE(ok);
  CHECK(ok->checkpoint_id == "c1");
  CHECK(ok->message == "m"s);
  CHECK(ok->metadata == R"({"k":[1]})"s);
  CHECK(ok->pinned);
  CHECK(ok->origin == "o");
  auto autoid = params::decode_checkpoint_create(
      obj(R"({"checkpoint_id":null,"message":null,"metadata":null})"));
  REQUIRE(autoid);
  CHECK(autoid->checkpoint_id.empty());
  CHECK_FALSE(autoid->message);
  CHECK_FALSE(autoid->metadata);
  CHECK(params::decode_checkpoint_create(obj(R"({"checkpoint_id":""})"))
            ->checkpoint_id.empty());
  CHECK(error_of(params::decode_checkpoint_create(obj(R"({"checkpoint_id":5})"))
                     .error()) == "checkpoint_id must be a string");
  CHECK(error_of(params::decode_checkpoint_create(obj(R"({"message":5})"))
                     .error()) == "message must be a string");
  CHECK(error_of(params::decode_checkpoint_create(obj(R"({"metadata":[1]})"))
                     .error()) == "metadata must be an object");
  CHECK(error_of(params::decode_checkpoint_create(obj(R"({"pinned":"yes"})"))
                     .error()) == "pinned must be a boolean");
  CHECK(error_of(
            params::decode_checkpoint_create(obj(R"({"checkpoint_id":"../x"})"))
                .error()) == "invalid checkpoint id: '../x'");
}

TEST_CASE("session.rollback params") {
  auto by_id =
      params::decode_rollback(obj(R"({"checkpoint_id":"c"})"), false, false);
  REQUIRE(by_id);
  CHECK(by_id->scrub_runtime);
  CHECK_FALSE(by_id->kill_processes);
  CHECK(by_id->origin == "allox-control-plane");
  auto by_depth =
      params::decode_rollback(obj(R"({"num_ancestors":2})"), false, true);
  REQUIRE(by_depth);
  CHECK(by_depth->num_ancestors == 2);
  CHECK(by_depth->kill_processes); // the daemon default
  auto override_default = params::decode_rollback(
      obj(R"({"num_ancestors":2,"kill_processes":false})"), false, true);
  CHECK_FALSE(override_default->kill_processes);
  for (auto bad : {R"({})", R"({"checkpoint_id":"c","num_ancestors":1})"})
    CHECK(error_of(params::decode_rollback(obj(bad), false, false).error()) ==
          "provide exactly one of checkpoint_id or num_ancestors");
  CHECK(error_of(params::decode_rollback(obj(R"({"num_ancestors":true})"),
                                         false, false)
                     .error()) == "num_ancestors must be an integer");
  CHECK(error_of(params::decode_rollback(obj(R"({"num_ancestors":1.5})"), false,
                                         false)
                     .error()) == "num_ancestors must be an integer");
  CHECK(error_of(
            params::decode_rollback(obj(R"({"num_ancestors":0})"), false, false)
                .error()) == "num_ancestors must be >= 1");
  CHECK(error_of(
            params::decode_rollback(obj(R"({"checkpoint_id":3})"), false, false)
                .error()) == "checkpoint_id must be a string");
  CHECK(error_of(
            params::decode_rollback(
                obj(R"({"checkpoint_id":"c","scrub_runtime":1})"), false, false)
                .error()) == "scrub_runtime must be a boolean");
  CHECK(error_of(params::decode_rollback(obj(R"({"checkpoint_id":"c"})"), true,
                                         false)
                     .error()) ==
        "rollback after runtime reset requires reset_token");
  auto with_token = params::decode_rollback(
      obj(R"({"checkpoint_id":"c","reset_token":"t"})"), true, false);
  CHECK(with_token->reset_token == "t");
}
