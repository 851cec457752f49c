// SPDX-License-Identifier: Apache-2.0
#include "messages/params.hpp"

#include "messages/ids.hpp"

namespace allox::params {

namespace {

const json::value* find(const json::object& p, std::string_view name) {
  auto it = p.find(name);
  return it == p.end() ? nullptr : &it->value();
}

caf::error invalid(std::string msg) {
  return make_error(errc::invalid_argument, std::move(msg));
}

} // namespace

expected<std::string> required_string(const json::object& p,
                                      std::string_view name) {
  auto* v = find(p, name);
  if (v == nullptr || !v->is_string() || v->get_string().empty())
    return invalid("missing string parameter: " + std::string{name});
  return std::string{v->get_string()};
}

expected<std::string> required_id(const json::object& p, std::string_view name,
                                  std::string_view kind) {
  auto s = required_string(p, name);
  if (!s)
    return s;
  if (auto err = validate_id(kind, *s))
    return err;
  return s;
}

expected<bool> optional_bool(const json::object& p, std::string_view name,
                             bool fallback) {
  auto* v = find(p, name);
  if (v == nullptr || v->is_null())
    return fallback;
  if (!v->is_bool())
    return invalid(std::string{name} + " must be a boolean");
  return v->get_bool();
}

expected<int64_t> optional_int(const json::object& p, std::string_view name,
                               int64_t fallback) {
  auto* v = find(p, name);
  if (v == nullptr || v->is_null())
    return fallback;
  if (v->is_int64())
    return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= INT64_MAX)
    return static_cast<int64_t>(v->get_uint64());
  return invalid(std::string{name} + " must be an integer");
}

expected<std::string> optional_string(const json::object& p,
                                      std::string_view name,
                                      std::string fallback) {
  auto* v = find(p, name);
  if (v == nullptr || v->is_null())
    return fallback;
  if (!v->is_string())
    return invalid(std::string{name} + " must be a string");
  return std::string{v->get_string()};
}

bool has(const json::object& p, std::string_view name) {
  auto* v = find(p, name);
  return v != nullptr && !v->is_null();
}

std::string origin(const json::object& p) {
  auto* v = find(p, "origin");
  if (v == nullptr || v->is_null())
    return std::string{default_origin};
  if (v->is_string()) {
    if (v->get_string().empty())
      return std::string{default_origin};
    return std::string{v->get_string()};
  }
  return json::serialize(*v);
}

// -- reader -------------------------------------------------------------------

std::string reader::required_string(std::string_view name) {
  return take(params::required_string(p_, name));
}

std::string reader::required_id(std::string_view name, std::string_view kind) {
  return take(params::required_id(p_, name, kind));
}

bool reader::optional_bool(std::string_view name, bool fallback) {
  if (failed())
    return fallback;
  auto v = params::optional_bool(p_, name, fallback);
  return v ? *v : (fail(std::move(v.error())), fallback);
}

int64_t reader::optional_int(std::string_view name, int64_t fallback) {
  if (failed())
    return fallback;
  auto v = params::optional_int(p_, name, fallback);
  return v ? *v : (fail(std::move(v.error())), fallback);
}

std::string reader::optional_string(std::string_view name,
                                    std::string fallback) {
  if (failed())
    return fallback;
  auto v = params::optional_string(p_, name, fallback);
  return v ? std::move(*v) : (fail(std::move(v.error())), std::move(fallback));
}

void reader::check(bool ok, std::string_view msg) {
  if (!ok)
    fail(invalid(std::string{msg}));
}

void reader::fail(caf::error err) {
  if (!err_)
    err_ = std::move(err);
}

} // namespace allox::params
