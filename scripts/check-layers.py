#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that every #include of ours points down the layers.

The layers, lowest first (docs/architecture.md, "Layers"):

  messages   typed interfaces, commands, results, events: nothing of ours
  guest      OS adapters, store, sandbox launcher, HTTP transport
  bpf        the eBPF programs and their loaders
  tracking   process tracking in user space, above the probe
  actors     the typed core: one actor (or a folder of facets) each
  fronts     the wire fronts over the core (native RPC, stream, metrics, ...)
  daemon     main and wiring: the only folder that sees every layer
  tools      programs run inside a sandbox or before the daemon
  cli        alloxctl: speaks HTTP and JSON, links no daemon library

A folder may include itself and the folders listed for it below. tests/
and bench/ may include anything. Usage: check-layers.py [ROOT]; exits 1
and names every wrong-way include.
"""
import os
import re
import sys

ALLOWED = {
    "messages": set(),
    "guest": {"messages"},
    "bpf": {"messages", "guest"},
    "tracking": {"messages", "guest", "bpf"},
    "actors": {"messages", "guest", "bpf", "tracking"},
    "fronts": {"messages", "guest", "bpf", "tracking", "actors"},
    "daemon": {"messages", "guest", "bpf", "tracking", "actors", "fronts"},
    # The bootstrap check shares tracking's readiness probes.
    "tools": {"messages", "guest", "tracking"},
    # Header-only helpers of guest (unique_fd); alloxctl links no guest
    # library, so anything more would not link.
    "cli": {"guest"},
}

UNCHECKED = {"tests", "bench", "build", ".git", "docs", "deploy", "kernel",
             "scripts", "cmake", "node_modules"}

SOURCE = re.compile(r".*\.(c|h|cpp|hpp)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    """The top folder of a repository-relative path, or None."""
    head = path.split("/", 1)[0]
    return head if "/" in path else None


def violations(root):
    """Yields (file, line number, included path) for each wrong-way include."""
    for top in sorted(os.listdir(root)):
        if (top in UNCHECKED or top.startswith(".")
                or not os.path.isdir(os.path.join(root, top))):
            continue
        if top not in ALLOWED:
            yield (top + "/", 0, "a folder the layer table does not know")
            continue
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not SOURCE.match(name):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                with open(full, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = layer_of(m.group(1))
                        # Same-folder includes ("process.h") and generated
                        # headers ("vmlinux.h") carry no folder.
                        if target is None or target not in ALLOWED:
                            continue
                        if target != top and target not in ALLOWED[top]:
                            yield (rel, n, m.group(1))


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    bad = list(violations(root))
    for rel, n, inc in bad:
        print(f"{rel}:{n}: includes {inc}: {rel.split('/')[0]} may include "
              f"only {sorted(ALLOWED.get(rel.split('/')[0], set()))}")
    if bad:
        print(f"{len(bad)} wrong-way include(s)")
        return 1
    print("layers: every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
