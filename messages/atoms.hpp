// SPDX-License-Identifier: Apache-2.0
// The daemon's atoms, in one type ID block.
#pragma once

#include <caf/type_id.hpp>

CAF_BEGIN_TYPE_ID_BLOCK(allox, caf::first_custom_type_id)
  CAF_ADD_ATOM(allox, allox::atom, rpc, "rpc")
  CAF_ADD_ATOM(allox, allox::atom, load, "load")
  CAF_ADD_ATOM(allox, allox::atom, write, "write")
  CAF_ADD_ATOM(allox, allox::atom, audit, "audit")
  CAF_ADD_ATOM(allox, allox::atom, stats, "stats")
  CAF_ADD_ATOM(allox, allox::atom, retire, "retire")
  CAF_ADD_ATOM(allox, allox::atom, flush, "flush")
  CAF_ADD_ATOM(allox, allox::atom, run, "run")
  CAF_ADD_ATOM(allox, allox::atom, session, "session")
  CAF_ADD_ATOM(allox, allox::atom, agent, "agent")
  CAF_ADD_ATOM(allox, allox::atom, purge, "purge")
  CAF_ADD_ATOM(allox, allox::atom, log, "log")
  CAF_ADD_ATOM(allox, allox::atom, tick, "tick")
  CAF_ADD_ATOM(allox, allox::atom, seal, "seal")
  CAF_ADD_ATOM(allox, allox::atom, runs, "runs")
  CAF_ADD_ATOM(allox, allox::atom, track, "track")
  CAF_ADD_ATOM(allox, allox::atom, untrack, "untrack")
  CAF_ADD_ATOM(allox, allox::atom, status, "status")
  CAF_ADD_ATOM(allox, allox::atom, restart, "restart")
  CAF_ADD_ATOM(allox, allox::atom, writes, "writes")
CAF_END_TYPE_ID_BLOCK(allox)
