// SPDX-License-Identifier: Apache-2.0
// Decoding of RPC parameters with the prototype's validation messages.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace allox::params {

/// Default `origin` of mutating calls when the caller gives none.
inline constexpr std::string_view default_origin = "allox-control-plane";

/// A non-empty string parameter: "missing string parameter: <name>".
expected<std::string> required_string(const json::object& p,
                                      std::string_view name);

/// A required string that must also satisfy the id rule for `kind`.
expected<std::string> required_id(const json::object& p, std::string_view name,
                                  std::string_view kind);

/// A JSON boolean or the default: "<name> must be a boolean".
expected<bool> optional_bool(const json::object& p, std::string_view name,
                             bool fallback);

/// A JSON integer (booleans rejected) or the default; errors say
/// "<name> must be an integer".
expected<int64_t> optional_int(const json::object& p, std::string_view name,
                               int64_t fallback);

/// A string, absent or null: "<name> must be a string".
expected<std::string> optional_string(const json::object& p,
                                      std::string_view name,
                                      std::string fallback = {});

/// True when the key is present and not null.
bool has(const json::object& p, std::string_view name);

/// The `origin` parameter, stringified; default_origin when absent.
std::string origin(const json::object& p);

/// Reads one request's parameters and keeps the first error: once a read
/// fails, later reads return their fallback, so a decoder reads every field
/// in order and the caller checks once (cmd::decode). The error a caller
/// sees is the one the field-by-field early returns gave.
class reader {
public:
  explicit reader(const json::object& p) : p_(p) {}

  reader(const reader&) = delete;
  reader& operator=(const reader&) = delete;

  /// The parameters, for the few fields read by hand.
  const json::object& params() const { return p_; }

  /// A non-empty string, else "missing string parameter: <name>".
  std::string required_string(std::string_view name);

  /// A required string that satisfies the id rule for `kind`.
  std::string required_id(std::string_view name, std::string_view kind);

  /// A boolean, or `fallback` when absent or null.
  bool optional_bool(std::string_view name, bool fallback);

  /// An integer, or `fallback` when absent or null.
  int64_t optional_int(std::string_view name, int64_t fallback);

  /// A string, or `fallback` when absent or null.
  std::string optional_string(std::string_view name, std::string fallback = {});

  /// True when the key is present and not null.
  bool has(std::string_view name) const { return params::has(p_, name); }

  /// The `origin` parameter (never fails).
  std::string origin() const { return params::origin(p_); }

  /// The value of `x`, or a default one with its error kept.
  template <class T>
  T take(expected<T> x) {
    if (x)
      return std::move(*x);
    fail(std::move(x.error()));
    return T{};
  }

  /// Keeps `msg` as an invalid_argument error unless `ok` (or an earlier
  /// error is kept already).
  void check(bool ok, std::string_view msg);

  /// Keeps `err` unless an earlier error is kept already.
  void fail(caf::error err);

  /// True once a read failed.
  bool failed() const { return static_cast<bool>(err_); }

  /// The first error, or none.
  const caf::error& error() const { return err_; }

private:
  const json::object& p_;
  caf::error err_;
};

} // namespace allox::params
