#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Safety net for the test suite: unmounts stores and detaches loop devices
# that tests left under /tmp/allox-test-* (a test binary that crashed cannot
# run its own clean-up). Touches nothing else. Exits 0 if nothing is left.
set -u
prefix=/tmp/allox-test-
# Daemons started by a test binary that died: SIGTERM makes them unmount.
if pkill -TERM -f -- "--root $prefix" 2>/dev/null; then
  for _ in $(seq 50); do
    pgrep -f -- "--root $prefix" >/dev/null || break
    sleep 0.1
  done
  pkill -KILL -f -- "--root $prefix" 2>/dev/null || true
fi
awk -v p="$prefix" '$2 ~ "^"p {print $2}' /proc/mounts | sort -r |
  while read -r mnt; do
    umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
  done
losetup -a -O NAME,BACK-FILE -n 2>/dev/null | awk -v p="$prefix" 'index($2,p)==1 {print $1}' |
  while read -r dev; do losetup -d "$dev" 2>/dev/null || true; done
# Test cgroup subtrees (named after the test's scratch directory) below the
# cgroup v2 mount: kill what runs there, remove the groups bottom-up.
v2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
if [ -n "$v2" ]; then
  for tree in "$v2"/allox-test-*; do
    [ -d "$tree" ] || continue
    [ -w "$tree/cgroup.kill" ] && echo 1 >"$tree/cgroup.kill" 2>/dev/null
    sleep 0.2
    find "$tree" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
fi
left=$(losetup -a -O BACK-FILE -n 2>/dev/null | grep -c "^$prefix" || true)
if [ "${left:-0}" -gt 0 ]; then
  echo "cleanup: $left test loop device(s) still attached" >&2
  exit 1
fi
echo "cleanup: no test mounts or loop devices left"
