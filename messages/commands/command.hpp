// SPDX-License-Identifier: Apache-2.0
// What every command struct of messages/commands/ states once: its wire
// name (`name`), what its actor replies (`reply`, where typed), and, for an
// action callers send, its decoder `static T decode(params::reader&)`.
// Everything else (the RPC routing rows, an actor's behaviour) is derived
// from the type list of the actor that serves it (messages/commands/lists.hpp).
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"
#include "messages/params.hpp"

#include <type_traits>
#include <utility>

namespace allox::cmd {

/// True when `Command` has a decoder: it is an action callers send, and
/// gets a routing row; commands without one are sent only by actors.
template <class Command, class = void>
struct is_action : std::false_type {};

template <class Command>
struct is_action<Command, std::void_t<decltype(Command::decode(
                              std::declval<params::reader&>()))>>
    : std::true_type {};

template <class Command>
inline constexpr bool is_action_v = is_action<Command>::value;

/// True when the command needs tracked execution (`needs_exec`): the RPC
/// front refuses it on a daemon without it.
template <class Command, class = void>
struct needs_exec : std::false_type {};

template <class Command>
struct needs_exec<Command, std::void_t<decltype(Command::needs_exec)>>
    : std::bool_constant<Command::needs_exec> {};

/// What the actor serving `Command` replies: the typed result its struct
/// names (`Command::reply`), else the JSON its handler builds.
template <class Command, class = void>
struct reply_type {
  using type = json::value;
};

template <class Command>
struct reply_type<Command, std::void_t<typename Command::reply>> {
  using type = typename Command::reply;
};

template <class Command>
using reply_t = typename reply_type<Command>::type;

/// Decodes a command with `decoder` (a command's static decode function,
/// given the extra arguments it takes): the value, or the first error its
/// reads kept.
template <class Command, class... Args, class... Given>
expected<Command> decode_with(Command (*decoder)(params::reader&, Args...),
                              const json::object& p, Given&&... args) {
  params::reader r{p};
  auto c = decoder(r, std::forward<Given>(args)...);
  if (r.failed())
    return r.error();
  return c;
}

/// Decodes `Command` from a request's parameters with its `decode`.
template <class Command, class... Given>
expected<Command> decode(const json::object& p, Given&&... args) {
  return decode_with<Command>(&Command::decode, p,
                              std::forward<Given>(args)...);
}

} // namespace allox::cmd
