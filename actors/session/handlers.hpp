// SPDX-License-Identifier: Apache-2.0
// Every facet of the SESSION actor: the handler overloads session.cpp
// derives its behaviour from (one per command of cmd::session_commands),
// and what the facets call of each other. Internal to actors/session/.
#pragma once

#include "actors/session/checkpoints.hpp"
#include "actors/session/files.hpp"
#include "actors/session/lifecycle.hpp"
#include "actors/session/network.hpp"
#include "actors/session/pause.hpp"
#include "actors/session/runs.hpp"
#include "actors/session/runtime.hpp"
#include "actors/session/share.hpp"
#include "actors/session/tracking.hpp"
#include "actors/session/turns.hpp"
#include "actors/session/watches.hpp"
#include "actors/session/writes.hpp"
