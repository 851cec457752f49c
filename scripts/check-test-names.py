#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that no doctest case name holds a character CTest cannot carry.

doctest_discover_tests turns every case into one CTest test whose name is
a CMake list element: a ';' in a name splits it into two tests that each
match no case and fail. Usage: check-test-names.py [ROOT]; exits 1 and
names every such case.
"""
import os
import re
import sys

CASE = re.compile(r'TEST_CASE\s*\(((?:\s*"(?:[^"\\]|\\.)*")+)')
PIECE = re.compile(r'"((?:[^"\\]|\\.)*)"')


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = []
    for folder, _, files in os.walk(os.path.join(root, "tests")):
        for name in files:
            if not name.endswith((".cpp", ".hpp")):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for m in CASE.finditer(text):
                title = "".join(PIECE.findall(m.group(1)))
                if ";" in title:
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f"{path}:{line}: {title}")
    for b in bad:
        print(f"';' in a test case name (CTest would split it): {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
