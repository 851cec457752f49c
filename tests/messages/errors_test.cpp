// SPDX-License-Identifier: Apache-2.0
#include "messages/errors.hpp"
#include "messages/json.hpp"
#include "messages/rpc.hpp"

#include <caf/sec.hpp>
#include <doctest/doctest.h>

using namespace allox;

TEST_CASE("errors: stable codes and HTTP classes") {
  CHECK(static_cast<int>(errc::invalid_argument) == 1);
  CHECK(static_cast<int>(errc::unsupported) == 8);
  CHECK(static_cast<int>(errc::forbidden) == 9);
  CHECK(code_name(errc::forbidden) == "forbidden");
  CHECK(http_status(errc::forbidden) == 400);
  CHECK(code_of(make_error(errc::forbidden, "no")) == errc::forbidden);
  CHECK(code_name(errc::not_found) == "not_found");
  CHECK(code_name(errc::payload_too_large) == "payload_too_large");
  CHECK(http_status(errc::invalid_argument) == 400);
  CHECK(http_status(errc::not_found) == 400);
  CHECK(http_status(errc::conflict) == 400);
  CHECK(http_status(errc::unauthorized) == 401);
  CHECK(http_status(errc::internal) == 500);
}

TEST_CASE("errors: message and code survive the caf::error round trip") {
  auto err = make_error(errc::conflict, "session is busy");
  CHECK(code_of(err) == errc::conflict);
  CHECK(message_of(err) == "session is busy");
}

TEST_CASE("errors: foreign errors are internal and never leak details") {
  caf::error timeout = caf::make_error(caf::sec::request_timeout);
  CHECK(code_of(timeout) == errc::internal);
  CHECK(message_of(timeout).find("timed out") != std::string::npos);
  caf::error other = caf::make_error(caf::sec::runtime_error, "secret");
  CHECK(message_of(other) == "internal workspace daemon error");
}

TEST_CASE("rpc: envelopes") {
  auto ok = json::parse(ok_body(R"({"a":1})")).as_object();
  CHECK(ok.at("ok") == true);
  CHECK(ok.at("result").as_object().at("a") == 1);
  auto bad =
      json::parse(error_body("no \"such\" thing", "not_found")).as_object();
  CHECK(bad.at("ok") == false);
  CHECK(bad.at("error") == "no \"such\" thing");
  CHECK(bad.at("code") == "not_found");
}
