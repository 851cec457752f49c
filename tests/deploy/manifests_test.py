# SPDX-License-Identifier: Apache-2.0
"""deploy/: every manifest parses (YAML with python3-yaml, TOML with
tomllib, systemd units with a unit-file reader) and the fields that tie the
pieces together hold: RuntimeClass -> containerd handler -> Kata
configuration, StatefulSet -> RuntimeClass, Secret, Service and data disk,
NetworkPolicy -> the tenant pods' RPC port, units -> the guest's scripts."""

import os
import re
import subprocess
import tomllib
import unittest

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.realpath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy")
GUEST_FILES = os.path.join(ROOT, "guest", "image", "files")
RPC_PORT = 8092
DAEMON = os.environ.get("ALLOX_DAEMON_PATH", "")


def load_yaml(name):
    with open(os.path.join(DEPLOY, "kubernetes", name)) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    assert len(docs) == 1, f"{name}: one object per file"
    return docs[0]


def load_toml(*parts):
    with open(os.path.join(DEPLOY, *parts), "rb") as f:
        return tomllib.load(f)


def load_unit(name):
    """A systemd unit as {section: {key: [values]}} (keys may repeat)."""
    unit, section = {}, None
    with open(os.path.join(DEPLOY, "systemd", name)) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            m = re.fullmatch(r"\[([A-Za-z]+)\]", line)
            if m:
                section = unit.setdefault(m.group(1), {})
                continue
            key, sep, value = line.partition("=")
            if not sep or section is None or not re.fullmatch(r"[A-Za-z]+",
                                                              key):
                raise AssertionError(f"{name}:{n}: not a unit line: {line}")
            section.setdefault(key, []).append(value)
    return unit


def words(unit, section, key):
    return " ".join(unit.get(section, {}).get(key, [])).split()


def guest_path(path):
    """Where a path of the guest image comes from in this repository."""
    return os.path.join(GUEST_FILES, path.lstrip("/"))


class KubernetesTest(unittest.TestCase):
    def setUp(self):
        self.rc = load_yaml("runtimeclass.yaml")
        self.sts = load_yaml("statefulset.yaml")
        self.svc = load_yaml("service.yaml")
        self.secret = load_yaml("secret.yaml")
        self.netpol = load_yaml("networkpolicy.yaml")
        self.pod = self.sts["spec"]["template"]
        (self.container,) = self.pod["spec"]["containers"]

    def test_every_manifest_has_its_kind(self):
        for doc, api, kind in (
                (self.rc, "node.k8s.io/v1", "RuntimeClass"),
                (self.sts, "apps/v1", "StatefulSet"),
                (self.svc, "v1", "Service"),
                (self.secret, "v1", "Secret"),
                (self.netpol, "networking.k8s.io/v1", "NetworkPolicy")):
            self.assertEqual((doc["apiVersion"], doc["kind"]), (api, kind))
            self.assertRegex(doc["metadata"]["name"], r"^[a-z0-9-]+$")
        namespaced = (self.sts, self.svc, self.secret, self.netpol)
        self.assertEqual({d["metadata"]["namespace"] for d in namespaced},
                         {"allox"})
        self.assertNotIn("namespace", self.rc["metadata"])

    def test_runtime_class_names_the_containerd_handler(self):
        handlers = load_toml("containerd", "kata-allox.toml")["plugins"][
            "io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
        self.assertIn(self.rc["handler"], handlers)
        self.assertIn("memory", self.rc["overhead"]["podFixed"])
        self.assertIn("cpu", self.rc["overhead"]["podFixed"])

    def test_one_pod_is_one_vm_for_one_tenant(self):
        spec = self.sts["spec"]
        self.assertEqual(spec["replicas"], 1)
        self.assertEqual(self.pod["spec"]["runtimeClassName"],
                         self.rc["metadata"]["name"])
        labels = self.pod["metadata"]["labels"]
        self.assertEqual(spec["selector"]["matchLabels"].items() -
                         labels.items(), set())
        self.assertIn("allox/tenant", labels)
        self.assertFalse(self.pod["spec"]["automountServiceAccountToken"])

    def test_data_disk_is_a_block_claim_kept_on_delete(self):
        (claim,) = self.sts["spec"]["volumeClaimTemplates"]
        self.assertEqual(claim["spec"]["volumeMode"], "Block")
        self.assertEqual(claim["spec"]["accessModes"], ["ReadWriteOnce"])
        self.assertRegex(claim["spec"]["resources"]["requests"]["storage"],
                         r"^\d+[GT]i$")
        (device,) = self.container["volumeDevices"]
        self.assertEqual(device["name"], claim["metadata"]["name"])
        env = {e["name"]: e.get("value") for e in self.container["env"]}
        self.assertEqual(env["ALLOX_DATA_DISK"], device["devicePath"])
        retention = self.sts["spec"]["persistentVolumeClaimRetentionPolicy"]
        self.assertEqual(retention,
                         {"whenDeleted": "Retain", "whenScaled": "Retain"})

    def test_token_comes_from_the_secret_as_a_file(self):
        vols = {v["name"]: v for v in self.pod["spec"]["volumes"]}
        (mount,) = [m for m in self.container["volumeMounts"]
                    if "secret" in vols[m["name"]]]
        secret = vols[mount["name"]]["secret"]
        self.assertEqual(secret["secretName"], self.secret["metadata"]["name"])
        self.assertTrue(mount["readOnly"])
        self.assertEqual(secret["defaultMode"], 0o400)
        self.assertIn("token", self.secret["stringData"])
        env = {e["name"]: e.get("value") for e in self.container["env"]}
        self.assertEqual(env["ALLOX_TOKEN_FILE"],
                         mount["mountPath"] + "/token")
        self.assertFalse(any("valueFrom" in e for e in self.container["env"]),
                         "the token must not be an environment variable")

    def test_probes_and_port(self):
        (port,) = self.container["ports"]
        self.assertEqual((port["containerPort"], port["protocol"]),
                         (RPC_PORT, "TCP"))
        env = {e["name"]: e.get("value") for e in self.container["env"]}
        self.assertTrue(env["ALLOX_LISTEN"].endswith(f":{RPC_PORT}"))
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            get = self.container[probe]["httpGet"]
            self.assertEqual(get["path"], "/health", probe)
            self.assertIn(get["port"], (port["name"], RPC_PORT), probe)
        self.assertGreaterEqual(
            self.container["startupProbe"]["periodSeconds"] *
            self.container["startupProbe"]["failureThreshold"], 60,
            "first boot formats the data disk")

    def test_resources_are_requested(self):
        res = self.container["resources"]
        for kind in ("requests", "limits"):
            self.assertIn("cpu", res[kind])
            self.assertIn("memory", res[kind])

    def test_entry_point_is_in_the_image(self):
        (command,) = self.container["command"]
        self.assertTrue(os.access(guest_path(command), os.X_OK), command)
        self.assertTrue(self.container["securityContext"]["privileged"])

    def test_service_selects_the_tenant_pod_on_the_rpc_port(self):
        spec = self.svc["spec"]
        self.assertEqual(self.sts["spec"]["serviceName"],
                         self.svc["metadata"]["name"])
        self.assertEqual(spec["clusterIP"], "None")
        labels = self.pod["metadata"]["labels"]
        self.assertEqual(spec["selector"].items() - labels.items(), set())
        (port,) = spec["ports"]
        self.assertEqual(port["port"], RPC_PORT)
        self.assertIn(port["targetPort"],
                      (self.container["ports"][0]["name"], RPC_PORT))

    def test_only_the_control_plane_reaches_the_rpc_port(self):
        spec = self.netpol["spec"]
        labels = self.pod["metadata"]["labels"]
        self.assertEqual(spec["podSelector"]["matchLabels"].items() -
                         labels.items(), set())
        self.assertEqual(spec["policyTypes"], ["Ingress"])
        (rule,) = spec["ingress"]
        self.assertEqual(rule["ports"], [{"protocol": "TCP",
                                          "port": RPC_PORT}])
        (peer,) = rule["from"]
        # One peer holding both selectors: control-plane pods in the
        # control-plane namespace (two peers would admit either).
        self.assertEqual(set(peer), {"namespaceSelector", "podSelector"})
        self.assertTrue(peer["namespaceSelector"]["matchLabels"])
        self.assertTrue(peer["podSelector"]["matchLabels"])


class KataTest(unittest.TestCase):
    def setUp(self):
        self.kata = load_toml("kata", "configuration-allox.toml")
        self.qemu = self.kata["hypervisor"]["qemu"]
        runtimes = load_toml("containerd", "kata-allox.toml")["plugins"][
            "io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
        (self.handler,) = runtimes.values()

    def test_guest_kernel_and_image(self):
        self.assertTrue(self.qemu["kernel"].startswith("/"))
        self.assertTrue(self.qemu["image"].endswith("allox-guest.raw"))
        self.assertNotIn("initrd", self.qemu, "Kata takes image or initrd")
        self.assertTrue(self.qemu["disable_image_nvdimm"])

    def test_vm_size(self):
        self.assertGreaterEqual(self.qemu["default_vcpus"], 1)
        self.assertGreaterEqual(self.qemu["default_maxvcpus"],
                                self.qemu["default_vcpus"])
        self.assertGreaterEqual(self.qemu["default_memory"], 512)

    def test_data_disk_is_virtio_blk(self):
        self.assertEqual(self.qemu["block_device_driver"], "virtio-blk")
        self.assertFalse(self.qemu["disable_block_device_use"])

    def test_handler_runs_kata_with_this_configuration(self):
        self.assertEqual(self.handler["runtime_type"], "io.containerd.kata.v2")
        self.assertTrue(self.handler["privileged_without_host_devices"])
        self.assertEqual(os.path.basename(self.handler["options"]["ConfigPath"]),
                         "configuration-allox.toml")


class SystemdTest(unittest.TestCase):
    UNITS = ("allox-data-disk.service", "allox-guest-bootstrap.service",
             "allox-workspace-daemon.service")

    def setUp(self):
        self.units = {n: load_unit(n) for n in self.UNITS}

    def test_units_parse_and_run_scripts_of_the_image(self):
        for name, unit in self.units.items():
            self.assertIn("Description", unit["Unit"], name)
            self.assertEqual(words(unit, "Install", "WantedBy"),
                             ["multi-user.target"], name)
            for key in ("ExecStart", "ExecStop"):
                for cmd in unit["Service"].get(key, []):
                    path = cmd.lstrip("-@:+!").split()[0]
                    self.assertTrue(os.access(guest_path(path), os.X_OK),
                                    f"{name}: {path}")

    def test_daemon_needs_the_data_disk_and_follows_the_check(self):
        d = self.units["allox-workspace-daemon.service"]
        self.assertIn("allox-data-disk.service", words(d, "Unit", "Requires"))
        after = words(d, "Unit", "After")
        self.assertIn("allox-data-disk.service", after)
        self.assertIn("allox-guest-bootstrap.service", after)
        self.assertIn("allox-guest-bootstrap.service", words(d, "Unit",
                                                               "Wants"))
        self.assertEqual(words(d, "Service", "Restart"), ["on-failure"])
        disk = self.units["allox-data-disk.service"]
        self.assertEqual(words(disk, "Service", "Type"), ["oneshot"])
        self.assertEqual(words(disk, "Service", "RemainAfterExit"), ["yes"])

    def test_daemon_is_protected_from_its_sessions(self):
        # Accounting makes systemd enable the controllers the sessions'
        # limits need; the OOM killer passes the daemon over.
        d = self.units["allox-workspace-daemon.service"]
        for key in ("CPUAccounting", "IOAccounting", "MemoryAccounting",
                    "TasksAccounting"):
            self.assertEqual(words(d, "Service", key), ["yes"], key)
        # What makes systemd enable the cpu controller.
        self.assertTrue(words(d, "Service", "CPUWeight"))
        self.assertLess(int(words(d, "Service", "OOMScoreAdjust")[0]), -500)

    def test_start_script_passes_flags_the_daemon_knows(self):
        with open(guest_path("/usr/libexec/allox/allox-daemon-start")) as f:
            script = f.read()
        code = "\n".join(line for line in script.splitlines()
                         if not line.lstrip().startswith("#"))
        flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", code))
        self.assertEqual(flags, {"--root", "--listen", "--process-audit-root",
                                 "--sandbox-init", "--store-quotas",
                                 "--session-limits"})
        # Every session has a share of the store by default.
        self.assertIn("disk.max=$disk_share", script)
        self.assertIn("ALLOX_WORKSPACE_TOKEN", script)
        if not os.access(DAEMON, os.X_OK):
            self.skipTest("daemon not built")
        out = subprocess.run([DAEMON, "--help"], capture_output=True,
                             text=True, timeout=30).stdout
        for flag in flags:
            self.assertIn(flag, out)


if __name__ == "__main__":
    unittest.main()
