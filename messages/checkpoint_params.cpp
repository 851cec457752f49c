// SPDX-License-Identifier: Apache-2.0
#include "messages/checkpoint_params.hpp"

#include "messages/ids.hpp"
#include "messages/params.hpp"

namespace allox::params {

namespace {

caf::error invalid(std::string msg) {
  return make_error(errc::invalid_argument, std::move(msg));
}

} // namespace

expected<checkpoint_create> decode_checkpoint_create(const json::object& p) {
  checkpoint_create out;
  auto id = optional_string(p, "checkpoint_id");
  if (!id)
    return invalid("checkpoint_id must be a string");
  if (!id->empty()) {
    if (auto err = validate_id("checkpoint", *id))
      return err;
    out.checkpoint_id = *id;
  }
  if (auto* m = p.if_contains("message"); m != nullptr && !m->is_null()) {
    if (!m->is_string())
      return invalid("message must be a string");
    out.message = std::string{m->get_string()};
  }
  if (auto* m = p.if_contains("metadata"); m != nullptr && !m->is_null()) {
    if (!m->is_object())
      return invalid("metadata must be an object");
    out.metadata = json::serialize(*m);
  }
  auto pinned = optional_bool(p, "pinned", false);
  if (!pinned)
    return pinned.error();
  out.pinned = *pinned;
  out.origin = origin(p);
  return out;
}

expected<rollback> decode_rollback(const json::object& p, bool after_reset,
                                   bool kill_default) {
  rollback out;
  bool has_id = has(p, "checkpoint_id");
  bool has_depth = has(p, "num_ancestors");
  if (has_id == has_depth)
    return invalid("provide exactly one of checkpoint_id or num_ancestors");
  if (has_id) {
    const auto& v = p.at("checkpoint_id");
    if (!v.is_string())
      return invalid("checkpoint_id must be a string");
    out.checkpoint_id = std::string{v.get_string()};
    if (auto err = validate_id("checkpoint", out.checkpoint_id))
      return err;
  } else {
    const auto& v = p.at("num_ancestors");
    if (v.is_bool() || !(v.is_int64() || v.is_uint64()))
      return invalid("num_ancestors must be an integer");
    auto n = v.is_int64() ? v.get_int64()
                          : static_cast<int64_t>(
                                std::min<uint64_t>(v.get_uint64(), INT64_MAX));
    if (n < 1)
      return invalid("num_ancestors must be >= 1");
    out.num_ancestors = n;
  }
  auto scrub = optional_bool(p, "scrub_runtime", true);
  if (!scrub)
    return scrub.error();
  out.scrub_runtime = *scrub;
  auto kill = optional_bool(p, "kill_processes", kill_default);
  if (!kill)
    return kill.error();
  out.kill_processes = *kill;
  out.origin = origin(p);
  if (after_reset) {
    auto token = p.if_contains("reset_token");
    if (token == nullptr || !token->is_string() || token->get_string().empty())
      return invalid("rollback after runtime reset requires reset_token");
    out.reset_token = std::string{token->get_string()};
  }
  return out;
}

} // namespace allox::params
