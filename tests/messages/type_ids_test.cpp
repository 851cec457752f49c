// SPDX-License-Identifier: Apache-2.0
// Every message an actor of the daemon takes is in a type ID block
// (messages/type_ids.hpp): checked at compile time over every typed
// interface in messages/actors.hpp, so a new command or event that is not
// added there fails the build of this test. At run time, each is known to
// the actor system by its name.
#include "messages/type_ids.hpp"

#include <caf/actor_system.hpp>
#include <caf/detail/type_list.hpp>
#include <caf/replies_to.hpp>
#include <doctest/doctest.h>

#include <string>
#include <type_traits>

using namespace allox;

namespace {

/// Types carried by value that need no entry: text, numbers, actor
/// handles and CAF's own.
template <class T>
constexpr bool needs_type_id =
    std::is_class_v<T> && !std::is_same_v<T, std::string> &&
    !caf::is_atom_constant<T>::value && !caf::is_typed_actor<T>::value &&
    !std::is_same_v<T, caf::actor> && !std::is_same_v<T, caf::error> &&
    !std::is_same_v<T, caf::ok_atom>;

template <class T>
constexpr bool registered() {
  return !needs_type_id<T> || caf::has_type_id<T>::value;
}

template <class List>
struct all_registered;

template <class... Ts>
struct all_registered<caf::detail::type_list<Ts...>> {
  static constexpr bool value = (registered<std::decay_t<Ts>>() && ...);
};

template <class Sig>
struct signature_registered;

template <class... Ins, class... Outs>
struct signature_registered<caf::typed_mpi<caf::detail::type_list<Ins...>,
                                           caf::output_tuple<Outs...>>> {
  static constexpr bool value =
      all_registered<caf::detail::type_list<Ins..., Outs...>>::value;
};

template <class Handle>
struct interface_registered;

template <class... Sigs>
struct interface_registered<caf::typed_actor<Sigs...>> {
  static constexpr bool value = (signature_registered<Sigs>::value && ...);
};

static_assert(interface_registered<stats_client_actor>::value);
static_assert(interface_registered<metadata_actor>::value);
static_assert(interface_registered<session_actor>::value);
static_assert(interface_registered<tracker_actor>::value);
static_assert(interface_registered<agent_actor>::value);
static_assert(interface_registered<agents_actor>::value);
static_assert(interface_registered<rpc_actor>::value);
static_assert(interface_registered<supervisor_actor>::value);

} // namespace

TEST_CASE("type IDs: every message type is known to the actor system by "
          "its name") {
  caf::actor_system_config cfg;
  add_message_types(cfg);
  caf::actor_system sys{cfg};
  for (const char* name :
       {"allox::cmd::checkpoint_create", "allox::cmd::process_start",
        "allox::run_finished", "allox::process_event_batch",
        "allox::metadata_write", "allox::lease_granted",
        "allox::cmd::share_access", "allox::actor_stats"}) {
    CAPTURE(name);
    CHECK(sys.types().make_value(name) != nullptr);
  }
  CHECK(caf::id_block::allox_messages::end -
            caf::id_block::allox_messages::begin >
        70);
}
