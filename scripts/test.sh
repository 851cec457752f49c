#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 2: from a fresh Debian 12 machine (as root) to a passing
# test run: installs packages, configures, builds and runs every suite with
# the `ci` workflow preset (optimised, warnings as errors, fault injection).
# PRESET=dev runs the same under ASan and UBSan.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
./scripts/install-deps.sh
# The real clients the fronts must serve, pinned by their lock files.
npm ci --prefix tests/fronts/e2b/sdk --no-audit --no-fund
npm ci --prefix tests/fronts/mcp/sdk --no-audit --no-fund
# Leftovers from an earlier interrupted run would confuse the tests.
./scripts/cleanup-test-mounts.sh >/dev/null || true
cmake --workflow --preset "${PRESET:-ci}" --fresh
