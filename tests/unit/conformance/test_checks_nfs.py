"""The NFS consistency probe: its output parser, the verdicts as tables, the cross-node phase with fake runners,
and the real node-side script where it can run here (read mode; refusal to write on a non-NFS mount). The write
path against a real NFS server is tests/vm/test_nfs_vm.py."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from provision.conformance import across_nfs
from provision.conformance.checks import nfs
from provision.conformance.facts import NodeFacts
from provision.conformance.model import Level, Outcome
from provision.conformance.parsers.nfs_probe import SCRIPT, parse_nfs_probe
from provision.errors import ParseError
from provision.spec.fleet import HostEntry, SshEndpoint
from tests.unit.conformance.helpers import area, facts, framed, run, spec

SHA = "ab" * 32
OTHER = "cd" * 32
MOUNT = {"name": "ckpt", "server": "10.0.0.5", "export": "/export/ckpt", "mountpoint": "/mnt/ckpt",
         "options": "vers=4.2,hard,nconnect=8", "min_free_gib": 100}
SUPER = "rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,nconnect=8,timeo=600,retrans=2,sec=sys"


def out(**over: object) -> str:
    """A probe's output for a healthy mount (1 TiB free), with keys changed or removed (None)."""
    base: dict[str, object] = {
        "mounted": "yes", "fstype": "nfs4", "source": "10.0.0.5:/export/ckpt",
        "mount_options": "rw,relatime", "super_options": SUPER, "free_bytes": 1 << 40,
        "written_sha": SHA, "written_bytes": 1048576, "read_sha": SHA, "read_bytes": 1048576,
        "read_mode": "direct", "removed": "yes",
    }
    base.update(over)
    return "".join(f"{k}={v}\n" for k, v in base.items() if v is not None)


def judge(text: str | tuple[int, str, str], **mount: object) -> dict[str, tuple[Outcome, str]]:
    node_spec = spec(nfs_mounts=[{**MOUNT, **mount}])
    results = area(run(node_spec, {"nfs.ckpt": text}), "nfs")
    return {k.removeprefix("nfs.ckpt."): (r.outcome, r.found) for k, r in results.items()}


P, F, E = Outcome.PASS, Outcome.FAIL, Outcome.ERROR


# (id, probe output, mount changes, expected outcomes of mounted/options/free/consistency)
CASES = [
    ("healthy", out(), {}, (P, P, P, P)),
    ("other-server", out(source="10.0.0.6:/export/ckpt"), {}, (F, P, P, P)),
    ("vers-4.1", out(super_options=SUPER.replace("vers=4.2", "vers=4.1")), {}, (P, F, P, P)),
    ("vers-4-any-minor", out(super_options=SUPER.replace("vers=4.2", "vers=4.1")), {"options": "vers=4,hard"},
     (P, P, P, P)),
    ("soft-mount", out(super_options=SUPER.replace("hard", "soft")), {}, (P, F, P, P)),
    ("nconnect-absent-is-1", out(super_options=SUPER.replace(",nconnect=8", "")), {}, (P, F, P, P)),
    ("nconnect-not-specified", out(super_options=SUPER.replace(",nconnect=8", "")), {"options": "vers=4.2"},
     (P, P, P, P)),
    ("read-only", out(mount_options="ro,relatime"), {}, (P, F, P, P)),
    ("low-space", out(free_bytes=50 << 30), {}, (P, P, F, P)),
    ("checksum-differs", out(read_sha=OTHER), {}, (P, P, P, F)),
    ("short-read", out(read_bytes=4096), {}, (P, P, P, F)),
    ("write-failed", out(written_sha=None, written_bytes=None, read_sha=None, read_bytes=None, read_mode=None,
                         removed=None, write_error="/mnt/ckpt/.provision-probe: Input/output error"), {}, (P, P, P, F)),
    ("no-write-reported", out(written_sha=None, written_bytes=None), {}, (P, P, P, F)),
    ("file-left-behind", out(removed=None), {}, (P, P, P, F)),
    ("buffered-read-still-consistent", out(read_mode="buffered"), {}, (P, P, P, P)),
]


@pytest.mark.parametrize(("text", "mount", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_verdicts(text: str, mount: dict[str, object], want: tuple[Outcome, ...]) -> None:
    got = judge(text, **mount)
    assert tuple(got[k][0] for k in ("mounted", "options", "free", "consistency")) == want, got


def test_the_found_values_say_what_the_kernel_reports() -> None:
    got = judge(out(super_options=SUPER.replace("nconnect=8", "nconnect=4")))
    assert got["options"][1] == "vers=4.2,hard,nconnect=4,rw"
    assert got["free"][1] == "1024.0"
    assert "O_DIRECT read (from the server)" in got["consistency"][1]
    assert "client's cache" in judge(out(read_mode="buffered"))["consistency"][1]


def test_not_mounted_fails_and_every_other_check_is_an_error_never_a_pass() -> None:
    got = judge("mounted=no\n")
    assert got["mounted"] == (F, "not mounted")
    assert {got[k][0] for k in ("options", "free", "consistency")} == {E}


def test_a_local_filesystem_at_the_mountpoint_is_not_nfs() -> None:
    got = judge("mounted=yes\nfstype=ext4\nsource=/dev/sda1\nmount_options=rw\nsuper_options=rw\nfree_bytes=1\n"
                "write_error=ext4 is not NFS: nothing written\n")
    assert got["mounted"] == (F, "ext4 /dev/sda1")
    assert {got[k][0] for k in ("options", "free", "consistency")} == {E}


@pytest.mark.parametrize("section", [(127, "", "python3: not found"), (1, "mounted=yes\n", "Traceback"),
                                     "garbage\n", "mounted=yes\nmounted=no\n", "colour=red\n", (0, "", "")])
def test_a_probe_that_could_not_run_or_parse_is_an_error(section: str | tuple[int, str, str]) -> None:
    assert {v[0] for v in judge(section).values()} == {E}


def test_no_mounts_in_the_spec_no_probe_no_check() -> None:
    assert nfs.probes(spec(), Level.QUICK) == []
    assert area(run(spec(), {}), "nfs") == {}


def test_the_probe_keeps_its_file_only_for_a_shared_mount() -> None:
    (one,) = nfs.probes(spec(nfs_mounts=[MOUNT]), Level.QUICK)
    (kept,) = nfs.probes(spec(nfs_mounts=[{**MOUNT, "shared": True}]), Level.QUICK)
    assert one.command.endswith("write /mnt/ckpt once") and kept.command.endswith("write /mnt/ckpt keep")


@pytest.mark.parametrize("text", ["", "=\n", "free_bytes=lots\n"])
def test_parser_rejects_what_the_script_never_prints(text: str) -> None:
    with pytest.raises(ParseError):
        parse_nfs_probe(text)


# ---- the real script, where this machine can run it ----------------------------------------------------------
def script(*args: str) -> str:
    done = subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True, check=True,
                          timeout=30)
    return done.stdout


def test_the_script_reads_mountinfo_and_writes_nothing_on_a_non_nfs_mount() -> None:
    probe = parse_nfs_probe(script("write", "/", "once"))
    assert probe.mounted and not probe.fstype.startswith("nfs") and probe.free_bytes is not None
    assert "is not NFS: nothing written" in probe.write_error and not probe.written_sha
    assert parse_nfs_probe(script("write", "/no/such/mountpoint", "once")).mounted is False


def test_the_script_reads_another_nodes_file_and_removes_it(tmp_path: Path) -> None:
    (tmp_path / ".provision-probe").mkdir()
    payload = bytes(range(256)) * 4097  # not a multiple of the page size
    (tmp_path / ".provision-probe/keep-a.bin").write_bytes(payload)
    probe = parse_nfs_probe(script("read", str(tmp_path), "keep-a.bin"))
    assert probe.read_sha == hashlib.sha256(payload).hexdigest() and probe.read_bytes == len(payload)
    assert probe.removed and not (tmp_path / ".provision-probe/keep-a.bin").exists()
    missing = parse_nfs_probe(script("read", str(tmp_path), "../../etc/passwd"))  # basename only: no escape
    assert "No such file" in missing.read_error


# ---- phase 2: across the nodes of a run ----------------------------------------------------------------------
def host(name: str, **mount: object) -> HostEntry:
    from provision.spec.fleet import BmcEndpoint

    return HostEntry(name=name, profile="ml_prod_v4", groups=("all",),
                     spec=spec(nfs_mounts=[{**MOUNT, "shared": True, **mount}]),
                     bmc=BmcEndpoint(address="https://10.0.0.1", username="u", password="p"),  # type: ignore[arg-type]
                     ssh=SshEndpoint(host=f"10.0.1.{ord(name[-1])}"))


def written(sha: str) -> NodeFacts:
    return facts({"nfs.ckpt": out(removed=None, kept=f"keep-{sha[:4]}.bin", written_sha=sha, read_sha=sha)})


class Reads:
    """Fake runners: each node answers its read probe from `answers`; records (node, file it was asked for)."""

    def __init__(self, answers: dict[str, tuple[int, str, str]]) -> None:
        self.answers, self.asked = answers, []  # type: ignore[var-annotated]

    def runner_for(self, h: HostEntry):  # type: ignore[no-untyped-def]
        def runner(node: str, script_text: str) -> bytes:
            names = re.findall(r"^_run (\S+) ", script_text, re.M)
            self.asked.append((node, re.findall(r"(keep-\w+\.bin)", script_text)))
            return framed({n: self.answers.get(node, (127, "", "not found")) for n in names})
        return runner


def read_out(sha: str, n: int = 1048576) -> tuple[int, str, str]:
    return 0, f"read_sha={sha}\nread_bytes={n}\nread_mode=direct\nremoved=yes\n", ""


def test_two_nodes_each_read_what_the_other_wrote() -> None:
    a, b = host("na"), host("nb")
    reads = Reads({"na": read_out(OTHER), "nb": read_out(SHA)})
    got = across_nfs.across_nodes([a, b], {"na": written(SHA), "nb": written(OTHER)}, reads.runner_for)
    assert [(r.id, r.outcome) for r in got["na"]] == [("nfs.ckpt.cross_node", P)]
    assert [(r.id, r.outcome) for r in got["nb"]] == [("nfs.ckpt.cross_node", P)]
    assert sorted(reads.asked) == [("na", [f"keep-{OTHER[:4]}.bin"]), ("nb", [f"keep-{SHA[:4]}.bin"])]


def test_a_reader_that_sees_other_bytes_or_no_file_fails() -> None:
    a, b = host("na"), host("nb")
    lost = (0, "read_error=/mnt/ckpt/.provision-probe/keep-abab.bin: No such file or directory\n", "")
    reads = Reads({"na": read_out(SHA), "nb": lost})  # na reads nb's file but gets na's own bytes
    got = across_nfs.across_nodes([a, b], {"na": written(SHA), "nb": written(OTHER)}, reads.runner_for)
    assert got["na"][0].outcome is F and got["nb"][0].outcome is F
    assert "cannot read na's file" in got["nb"][0].found


def test_a_writer_that_was_not_gathered_or_wrote_nothing_makes_the_reader_an_error() -> None:
    a, b = host("na"), host("nb")
    reads = Reads({"na": read_out(OTHER), "nb": read_out(SHA)})
    got = across_nfs.across_nodes([a, b], {"na": written(SHA), "nb": None}, reads.runner_for)
    assert got["na"][0].outcome is E and "nb could not be gathered" in got["na"][0].found
    assert got["nb"] == []  # its own report says it could not be gathered
    broken = facts({"nfs.ckpt": out(write_error="EIO", written_sha=None, kept=None)})
    got = across_nfs.across_nodes([a, b], {"na": written(SHA), "nb": broken}, reads.runner_for)
    assert got["na"][0].outcome is E and "nb wrote nothing to read" in got["na"][0].found


def test_a_read_round_trip_that_fails_is_an_error() -> None:
    a, b = host("na"), host("nb")
    got = across_nfs.across_nodes([a, b], {"na": written(SHA), "nb": written(OTHER)}, Reads({}).runner_for)
    assert {r.outcome for rs in got.values() for r in rs} == {E}


def test_one_node_on_the_export_is_waived_and_its_kept_file_removed() -> None:
    reads = Reads({"na": read_out(SHA)})
    got = across_nfs.across_nodes([host("na")], {"na": written(SHA)}, reads.runner_for)
    assert [(r.outcome, "only na mounts" in r.detail) for r in got["na"]] == [(Outcome.WAIVED, True)]
    assert reads.asked == [("na", [f"keep-{SHA[:4]}.bin"])]


def test_pairs_group_by_export_in_a_ring() -> None:
    hosts = [host("n1"), host("n2"), host("n3"), host("n4", export="/export/other")]
    ring, alone = nfs.pairs(hosts)
    assert [(r.name, w.name) for r, _, w, _ in ring] == [("n1", "n3"), ("n2", "n1"), ("n3", "n2")]
    assert [h.name for h, _ in alone] == ["n4"]
