// SPDX-License-Identifier: Apache-2.0
// The native wire's JSON of checkpoint records (the prototype's record:
// checkpoint_id, created_at_ns, origin, message, pinned, metadata, missing,
// parent_id, child_ids), written here once.
#pragma once

#include "messages/json.hpp"
#include "messages/results/checkpoints.hpp"

namespace allox {

json::object to_json(const checkpoint_record& r);
json::object to_json(const checkpoint_view& v);
json::object to_json(const checkpoint_page& p);

} // namespace allox
