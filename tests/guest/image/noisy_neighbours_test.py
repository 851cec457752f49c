# SPDX-License-Identifier: Apache-2.0
"""The verdicts of guest/image/noisy-neighbours.py on made-up latencies:
p99 by nearest rank, the 3x bound, a phase measured twice failing an
operation only when it is over in both, and an anchor far above the
calmest one taken again."""

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


class Anchors(unittest.TestCase):
    """idle_loop against loops handed out in turn instead of the VM's."""

    def setUp(self):
        self.real = nn.steady_loop
        nn.calmest.clear()
        nn.failed = 0

    def tearDown(self):
        nn.steady_loop = self.real
        nn.calmest.clear()

    def anchors(self, *loops):
        """idle_loop with `loops` handed out in turn: the anchor it
        returns and the tags of the loops it ran."""
        queue = list(loops)
        taken = []

        class handed:
            def __init__(self, tag):
                taken.append(tag)
                self.loop = queue.pop(0)

            def start(self):
                return self

            def join(self):
                return self.loop

        nn.steady_loop = handed
        with contextlib.redirect_stdout(io.StringIO()):
            return nn.idle_loop("phase"), taken

    def test_unsettled_against_the_calmest(self):
        nn.calmest.update({"process.start": 0.2, "checkpoint.create": 0.02,
                           "file.write": 0.01})
        self.assertEqual(nn.unsettled(loop(0.3, 0.05, 0.02)),
                         ["checkpoint.create"])
        self.assertEqual(nn.unsettled(IDLE), [])

    def test_the_first_anchor_sets_the_calmest(self):
        idle, taken = self.anchors(loop(0.2, 0.05, 0.01))
        self.assertEqual(len(taken), 1)
        self.assertEqual(nn.calmest["checkpoint.create"], 0.05)

    def test_an_unsettled_anchor_is_taken_again(self):
        self.anchors(IDLE)
        calm = loop(0.2, 0.025, 0.01)
        idle, taken = self.anchors(loop(0.2, 0.1, 0.01), calm)
        self.assertIs(idle, calm)
        self.assertEqual(taken, ["phase idle", "phase idle again"])
        self.assertEqual(nn.calmest["checkpoint.create"], 0.02)

    def test_the_second_anchor_stands(self):
        self.anchors(IDLE)
        second = loop(0.2, 0.09, 0.01)
        idle, taken = self.anchors(loop(0.2, 0.1, 0.01), second)
        self.assertIs(idle, second)
        self.assertEqual(len(taken), 2)


if __name__ == "__main__":
    unittest.main()
