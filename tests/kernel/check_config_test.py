# SPDX-License-Identifier: Apache-2.0
"""kernel/check-config against the running kernel and against fixture
configurations made from it (or from the fragments) with options removed."""

import gzip
import json
import os
import platform
import re
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.realpath(__file__))))
CHECKER = os.path.join(ROOT, "kernel", "check-config")
FRAGMENTS = [os.path.join(ROOT, "kernel", n)
             for n in ("allox-required.config", "allox-recommended.config")]


def run(*args):
    p = subprocess.run([CHECKER, *args], capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def fragment_options(path):
    out = []
    with open(path) as f:
        for line in f:
            m = re.match(r"^(CONFIG_\w+)=(\S+)$", line.strip())
            if m:
                out.append((m.group(1), m.group(2)))
    return out


REQUIRED = dict(fragment_options(FRAGMENTS[0]))
RECOMMENDED = dict(fragment_options(FRAGMENTS[1]))


def running_config_path():
    for p in ("/proc/config.gz", f"/boot/config-{platform.release()}"):
        if os.path.exists(p):
            return p
    return None


def read_text(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode()


def synthetic_config(version="6.1.0"):
    """A configuration with every fragment option set as wanted."""
    lines = ["#", f"# Linux/x86 {version} Kernel Configuration", "#"]
    for name, value in {**REQUIRED, **RECOMMENDED}.items():
        lines.append(f"{name}={value}")
    return "\n".join(lines) + "\n"


def without(text, option, replacement=None):
    """text with `option`'s line removed, or replaced by `replacement`."""
    out = []
    for line in text.splitlines():
        if re.match(rf"^{option}=|^# {option} is not set$", line):
            if replacement is not None:
                out.append(replacement)
            continue
        out.append(line)
    return "\n".join(out) + "\n"


class FragmentTest(unittest.TestCase):
    def test_every_option_says_what_breaks_and_appears_once(self):
        rc, out, _ = run("--json", self.base_path)
        report = json.loads(out)
        names = [o["name"] for o in report["options"]]
        self.assertEqual(len(names), len(set(names)), "duplicate option")
        self.assertEqual(set(names), set(REQUIRED) | set(RECOMMENDED))
        for o in report["options"]:
            self.assertTrue(o["group"], o["name"])
            self.assertGreater(len(o["breaks"]), 15, o["name"])

    def test_the_areas_the_runtime_needs_are_required(self):
        for name in ("CONFIG_BTRFS_FS", "CONFIG_CGROUPS", "CONFIG_CGROUP_BPF",
                     "CONFIG_BPF_SYSCALL", "CONFIG_BPF_JIT",
                     "CONFIG_DEBUG_INFO_BTF", "CONFIG_PID_NS",
                     "CONFIG_NET_NS", "CONFIG_VIRTIO_BLK",
                     "CONFIG_VIRTIO_NET"):
            self.assertIn(name, REQUIRED)
        for name in ("CONFIG_MEMCG", "CONFIG_CGROUP_PIDS",
                     "CONFIG_CFS_BANDWIDTH", "CONFIG_SECCOMP_FILTER",
                     "CONFIG_USER_NS", "CONFIG_BLK_DEV_LOOP",
                     "CONFIG_VIRTIO_VSOCKETS"):
            self.assertIn(name, RECOMMENDED)

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.base_path = self.write("full.config", synthetic_config())

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text, compress=False):
        path = os.path.join(self.tmp.name, name)
        data = text.encode()
        with open(path, "wb") as f:
            f.write(gzip.compress(data) if compress else data)
        return path


class RunningKernelTest(unittest.TestCase):
    """The running kernel, read where it is (/proc/config.gz here)."""

    def setUp(self):
        self.path = running_config_path()
        if self.path is None:
            self.skipTest("this kernel exposes no configuration")

    def test_default_reads_the_running_kernel(self):
        rc, out, _ = run("--json")
        report = json.loads(out)
        self.assertEqual(report["config"], self.path)
        self.assertEqual(rc, 0 if report["ok"] else 1)
        self.assertEqual(report["kernel"]["version"].split(".")[:2],
                         platform.release().split(".")[:2])

    def test_report_matches_the_configuration(self):
        values = {}
        for line in read_text(self.path).splitlines():
            m = re.match(r"^(CONFIG_\w+)=(.*)$", line)
            if m:
                values[m.group(1)] = m.group(2)
        rc, out, _ = run("--json", self.path)
        report = json.loads(out)
        for o in report["options"]:
            self.assertEqual(o["found"], values.get(o["name"]), o["name"])
            present = values.get(o["name"]) in (o["wanted"], "m")
            self.assertEqual(o["status"] in ("present", "module"), present,
                             o["name"])
        missing = [o["name"] for o in report["options"]
                   if o["level"] == "required" and
                   o["status"] not in ("present", "module")]
        self.assertEqual(report["missing_required"], missing)
        self.assertEqual(rc, 1 if missing else 0)

    def test_text_mode_agrees_with_json(self):
        rc_text, out, _ = run(self.path)
        rc_json, _, _ = run("--json", self.path)
        self.assertEqual(rc_text, rc_json)
        self.assertIn("required:", out)
        self.assertIn("result: ok" if rc_text == 0 else "result: FAIL", out)


class FixtureTest(unittest.TestCase):
    """Configurations with options removed, from the running kernel's
    configuration when there is one, else from the fragments."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        path = running_config_path()
        base = read_text(path) if path else synthetic_config()
        # Fill in what this kernel lacks, so each test removes exactly one.
        for name, value in {**REQUIRED, **RECOMMENDED}.items():
            base = without(base, name, f"{name}={value}")
        if not re.search(r"^# Linux/\S+ \d+\.\d+", base, re.M):
            base = "# Linux/x86 6.1.0 Kernel Configuration\n" + base
        self.base = base

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text, compress=False):
        path = os.path.join(self.tmp.name, name)
        data = text.encode()
        with open(path, "wb") as f:
            f.write(gzip.compress(data) if compress else data)
        return path

    def check(self, text, *flags, compress=False):
        path = self.write("fixture.config" + (".gz" if compress else ""),
                          text, compress)
        rc, out, err = run("--json", *flags, path)
        return rc, json.loads(out)

    def test_complete_configuration_passes_strict(self):
        rc, report = self.check(self.base, "--strict", "--builtin")
        self.assertEqual(rc, 0, report["missing_required"])
        self.assertTrue(report["ok"])

    def test_each_required_option_removed_fails_and_says_what_breaks(self):
        for name in REQUIRED:
            with self.subTest(option=name):
                rc, report = self.check(without(self.base, name))
                self.assertEqual(rc, 1)
                self.assertFalse(report["ok"])
                self.assertEqual(report["missing_required"], [name])
                (o,) = [o for o in report["options"] if o["name"] == name]
                self.assertEqual(o["status"], "missing")
                self.assertIsNone(o["found"])

    def test_not_set_counts_as_missing_and_text_names_the_loss(self):
        text = without(self.base, "CONFIG_BTRFS_FS",
                       "# CONFIG_BTRFS_FS is not set")
        path = self.write("btrfs-off.config", text)
        rc, out, _ = run(path)
        self.assertEqual(rc, 1)
        self.assertRegex(out, r"missing +CONFIG_BTRFS_FS \(wanted y, found "
                              r"not set\): the workspace store")
        self.assertIn("result: FAIL", out)

    def test_recommended_option_removed_passes_unless_strict(self):
        text = without(self.base, "CONFIG_MEMCG")
        rc, report = self.check(text)
        self.assertEqual(rc, 0)
        self.assertEqual(report["missing_recommended"], ["CONFIG_MEMCG"])
        self.assertEqual(report["missing_required"], [])
        rc, report = self.check(text, "--strict")
        self.assertEqual(rc, 1)
        self.assertFalse(report["ok"])

    def test_modules_count_unless_builtin_is_asked(self):
        text = without(self.base, "CONFIG_VIRTIO_BLK", "CONFIG_VIRTIO_BLK=m")
        rc, report = self.check(text)
        self.assertEqual(rc, 0)
        (o,) = [o for o in report["options"]
                if o["name"] == "CONFIG_VIRTIO_BLK"]
        self.assertEqual((o["found"], o["status"]), ("m", "module"))
        rc, report = self.check(text, "--builtin")
        self.assertEqual(rc, 1)
        self.assertEqual(report["missing_required"], ["CONFIG_VIRTIO_BLK"])

    def test_gzip_configuration_is_read(self):
        rc, report = self.check(without(self.base, "CONFIG_PID_NS"),
                                compress=True)
        self.assertEqual(rc, 1)
        self.assertEqual(report["missing_required"], ["CONFIG_PID_NS"])

    def test_kernel_older_than_cgroup_kill_fails(self):
        text = re.sub(r"^# Linux/(\S+) \S+ Kernel Configuration$",
                      r"# Linux/\1 5.10.0 Kernel Configuration", self.base,
                      count=1, flags=re.M)
        rc, report = self.check(text)
        self.assertEqual(rc, 1)
        self.assertEqual(report["kernel"]["status"], "missing")
        self.assertEqual(report["kernel"]["minimum"], "5.14")

    def test_unreadable_or_foreign_input_is_exit_2(self):
        rc, out, err = run(os.path.join(self.tmp.name, "absent.config"))
        self.assertEqual(rc, 2)
        self.assertIn("cannot read", err)
        path = self.write("notes.txt", "hello\n")
        rc, out, err = run("--json", path)
        self.assertEqual(rc, 2)
        self.assertEqual(json.loads(out)["ok"], False)
        rc, out, err = run("--no-such-flag")
        self.assertEqual(rc, 2)

    def test_help_documents_exit_status(self):
        rc, out, _ = run("--help")
        self.assertEqual(rc, 0)
        for line in ("0  every required option is present",
                     "1  a required option is missing",
                     "2  usage error"):
            self.assertIn(line, out)


if __name__ == "__main__":
    unittest.main()
