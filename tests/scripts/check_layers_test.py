# SPDX-License-Identifier: Apache-2.0
"""scripts/check-layers.py: the real tree passes, a wrong-way include fails."""
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "check-layers.py")


def run(root):
    return subprocess.run([sys.executable, SCRIPT, root], capture_output=True,
                          text=True)


def tree(files):
    """A scratch repository holding `files` ({path: text})."""
    d = tempfile.TemporaryDirectory()
    for path, text in files.items():
        full = os.path.join(d.name, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    return d


class CheckLayers(unittest.TestCase):
    def test_the_repository_passes(self):
        r = run(ROOT)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_downward_includes_pass(self):
        with tree({"actors/a.cpp": '#include "guest/os/fs.hpp"\n',
                   "guest/os/fs.hpp": '#include "messages/json.hpp"\n',
                   "bpf/p.bpf.c": '#include "vmlinux.h"\n',
                   "tests/t.cpp": '#include "daemon/options.hpp"\n'}) as d:
            self.assertEqual(run(d).returncode, 0)

    def test_guest_including_actors_fails(self):
        with tree({"guest/http/server.cpp":
                   '// x\n#include "actors/rpc.hpp"\n'}) as d:
            r = run(d)
            self.assertEqual(r.returncode, 1)
            self.assertIn("guest/http/server.cpp:2: includes actors/rpc.hpp",
                          r.stdout)

    def test_messages_including_anything_fails(self):
        with tree({"messages/x.hpp": '#include "guest/log.hpp"\n'}) as d:
            self.assertEqual(run(d).returncode, 1)

    def test_cli_including_the_daemon_fails(self):
        with tree({"cli/x.cpp": '#include "daemon/options.hpp"\n'}) as d:
            self.assertEqual(run(d).returncode, 1)

    def test_an_unknown_source_folder_fails(self):
        with tree({"newlayer/x.cpp": "int x;\n"}) as d:
            r = run(d)
            self.assertEqual(r.returncode, 1)
            self.assertIn("newlayer/", r.stdout)


if __name__ == "__main__":
    unittest.main()
