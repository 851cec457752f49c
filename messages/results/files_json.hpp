// SPDX-License-Identifier: Apache-2.0
// The native wire's JSON of the file.* results (docs/rpc.md, "Files"),
// written here once.
#pragma once

#include "messages/json.hpp"
#include "messages/results/files.hpp"

namespace allox {

json::object to_json(const file_entry& e);
json::object to_json(const dir_page& p);
json::object to_json(const read_slice& r);
json::object to_json(const write_result& r);
json::object to_json(const mkdir_result& r);
json::object to_json(const remove_result& r);
json::object to_json(const move_result& r);
json::object to_json(const search_result& r);
json::object to_json(const replace_result& r);
json::object to_json(const transfer_begun& t);
json::object to_json(const transfer_audited& t);

} // namespace allox
