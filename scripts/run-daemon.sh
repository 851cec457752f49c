#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 1: from a fresh Debian 12 machine (as root) to a running
# daemon on the embedded default store, a loop-mounted Btrfs image.
#
#   ALLOX_STATE_DIR   where the image and mount point live (/var/lib/allox)
#   ALLOX_LISTEN      HOST:PORT (127.0.0.1:8092)
#   ALLOX_LOOP_SIZE   size of a new image (8G, sparse)
# Extra arguments go to the daemon. Ctrl-C stops it and unmounts the store.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

"$here/scripts/install-deps.sh"
cmake --preset release -S "$here" >/dev/null
cmake --build --preset release --target allox-workspace-daemon \
  allox-sandbox-init alloxctl

state=${ALLOX_STATE_DIR:-/var/lib/allox}
listen=${ALLOX_LISTEN:-127.0.0.1:8092}
mkdir -p "$state"
cat <<MSG
Starting allox-workspace-daemon on $listen, store $state/workspaces
(image $state/workspaces.img). Try, from another shell:

  curl -s -X POST http://$listen/v1/rpc \\
    -d '{"action":"session.create","params":{"agent_id":"agent-1","session_id":"s1"}}'
  curl -s -X POST http://$listen/v1/rpc \
    -d '{"action":"process.start","params":{"agent_id":"agent-1","session_id":"s1","argv":["sh","-c","echo hello"]}}'
  curl -s -X POST http://$listen/v1/rpc -d '{"action":"system.dump"}'

or with the command line (docs/cli.md):

  $here/build/release/bin/alloxctl --url http://$listen dump

MSG
exec "$here/build/release/bin/allox-workspace-daemon" \
  --root "$state/workspaces" \
  --process-audit-root "$state/runs" \
  --loop-image "$state/workspaces.img" \
  --loop-size "${ALLOX_LOOP_SIZE:-8G}" \
  --listen "$listen" "$@"
