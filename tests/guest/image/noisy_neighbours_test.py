# SPDX-License-Identifier: Apache-2.0
"""The verdicts of guest/image/noisy-neighbours.py on made-up latencies:
p99 by nearest rank, the 3x bound, and a phase measured twice failing an
operation only when it is over in both."""

import contextlib
import importlib.util
import io
import os
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.realpath(__file__)))))
spec = importlib.util.spec_from_file_location(
    "noisy_neighbours",
    os.path.join(ROOT, "guest", "image", "noisy-neighbours.py"))
nn = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nn)


class loop:
    """A steady loop's latencies (seconds), 10 runs and 100 of the rest."""

    def __init__(self, start, checkpoint, write):
        self.lat = {"process.start": [start] * 10,
                    "checkpoint.create": [checkpoint] * 100,
                    "file.write": [write] * 100}
        self.errors = []


IDLE = loop(0.2, 0.02, 0.01)


def verdicts(attempts):
    """{check name: passed} of compare(), and its printed text."""
    nn.failed = 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        nn.compare("phase", attempts)
    text = out.getvalue()
    lines = [l for l in text.splitlines() if l[:6] in ("PASS  ", "FAIL  ")]
    return {l[6:]: l.startswith("PASS") for l in lines}, text


class P99(unittest.TestCase):
    def test_nearest_rank(self):
        self.assertEqual(nn.p99(list(range(1, 101))), 99)
        self.assertEqual(nn.p99(list(range(1, 11))), 10)
        self.assertEqual(nn.p99([5]), 5)


class Compare(unittest.TestCase):
    def test_one_attempt_within_passes(self):
        v, _ = verdicts([(IDLE, loop(0.5, 0.05, 0.03))])
        self.assertTrue(all(v.values()), v)

    def test_one_attempt_over_fails_that_operation(self):
        v, _ = verdicts([(IDLE, loop(0.7, 0.05, 0.03))])
        self.assertFalse(v["phase: steady process.start p99 within 3x of idle"])
        self.assertTrue(v["phase: steady file.write p99 within 3x of idle"])

    def test_over_in_one_attempt_of_two_passes(self):
        # file.write over only in the first, process.start only in the
        # second: each was within its bound once, under the same load.
        v, text = verdicts([(IDLE, loop(0.3, 0.03, 0.05)),
                            (IDLE, loop(0.7, 0.03, 0.02))])
        self.assertTrue(all(v.values()), v)
        self.assertIn("attempt 2: p99 700 ms", text)
        self.assertIn("attempt 1: p99 50 ms", text)

    def test_over_in_both_attempts_fails(self):
        v, _ = verdicts([(IDLE, loop(0.3, 0.03, 0.05)),
                         (IDLE, loop(0.3, 0.03, 0.04))])
        self.assertFalse(v["phase: steady file.write p99 within 3x of idle"])
        self.assertEqual(nn.failed, 1)

    def test_each_attempt_against_its_own_idle_loop(self):
        slow_idle = loop(0.2, 0.02, 0.02)
        v, _ = verdicts([(IDLE, loop(0.3, 0.03, 0.05)),
                         (slow_idle, loop(0.3, 0.03, 0.05))])
        self.assertTrue(v["phase: steady file.write p99 within 3x of idle"])

    def test_errors_fail_the_phase(self):
        bad = loop(0.3, 0.03, 0.02)
        bad.errors = ["checkpoint.create: refused"]
        v, _ = verdicts([(IDLE, loop(0.3, 0.03, 0.05)), (IDLE, bad)])
        self.assertFalse(v["phase: the steady session saw no error"])


if __name__ == "__main__":
    unittest.main()
