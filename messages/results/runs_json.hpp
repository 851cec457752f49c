// SPDX-License-Identifier: Apache-2.0
// The native wire's JSON of a run's row: written here once, for the native
// front's replies, the live stream and the catalog's runs table (whose
// stored rows are this same JSON, so rows of every version read back).
#pragma once

#include "messages/errors.hpp"
#include "messages/results/runs.hpp"

#include <string>

namespace allox {

/// The row as the wire and the catalog spell it.
json::object to_json(const run_row& row);

/// {run_id, stream, offset, next_offset, size, data, eof, state}; `data`
/// as UTF-8 (invalid sequences replaced).
json::object to_json(const output_slice& s);

/// process.list: a bare array of rows without `processes`, or for a page
/// {agent_id, session_id, runs, has_more, next_cursor}.
json::value to_json(const run_list& l);

/// {run_id, written, eof}.
json::object to_json(const input_result& r);

/// {run_id, rows, cols}.
json::object to_json(const resize_result& r);

/// {row, dir}: what the live stream reads its start from.
json::object to_json(const run_subscription& s);

/// A row from its JSON; keys it does not know are kept in `unknown`.
/// `invalid_argument` when a known key has the wrong type or the row has
/// no run_id.
expected<run_row> run_row_from_json(const json::object& o);

/// A row from the catalog's text of it.
expected<run_row> run_row_from_text(const std::string& text);

} // namespace allox
