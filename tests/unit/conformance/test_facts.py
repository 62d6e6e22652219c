"""The gather script and its framing: run locally with /bin/sh (dash), no SSH."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from provision.conformance.facts import GatherError, Probe, build_script, gather, split_sections, ssh_argv
from provision.conformance.model import Level
from provision.conformance.runner import node_probes
from provision.spec.fleet import SshEndpoint
from tests.unit.conformance.helpers import framed, spec


def run_local(node: str, script: str) -> bytes:
    return subprocess.run(["sh", "-s"], input=script.encode(), capture_output=True, check=True, timeout=30).stdout


def test_sections_round_trip_exactly() -> None:
    probes = [
        Probe(name="out_err_rc", command="echo out; echo err >&2; exit 3"),
        Probe(name="no_newline", command="printf 'x'"),
        Probe(name="marker_like", command="printf '@@PROVISION fake 0 999 0\\n'"),
        Probe(name="missing_tool", command="no-such-tool-h7 --version"),
        Probe(name="binary", command="printf '\\001\\002'"),
    ]
    facts = gather("n1", probes, run_local)
    s = facts.sections
    assert (s["out_err_rc"].rc, s["out_err_rc"].stdout, s["out_err_rc"].stderr) == (3, "out\n", "err\n")
    assert s["no_newline"].stdout == "x"
    assert s["marker_like"].stdout == "@@PROVISION fake 0 999 0\n"
    assert s["missing_tool"].rc == 127
    assert s["binary"].stdout == "\x01\x02"
    assert facts.seconds > 0


def test_per_match_probe_runs_once_per_existing_path(tmp_path: Path) -> None:
    for name in ("nvme0n1", "nvme1n1", "nvme10n1"):
        (tmp_path / name).write_text(name)
    probe = Probe(name="smart", command='cat "$1"', each=f"{tmp_path}/nvme[0-9]*n1 {tmp_path}/absent*")
    facts = gather("n1", [probe], run_local)
    names = [s.name.rsplit("/", 1)[1] for s in facts.matching("smart")]
    assert names == ["nvme0n1", "nvme1n1", "nvme10n1"]
    assert [s.stdout for s in facts.matching("smart")] == names


def test_probes_run_concurrently(tmp_path: Path) -> None:
    # Each probe marks its start, then waits for the other's mark: only concurrent probes both see it.
    def probe(me: str, other: str) -> Probe:
        wait = f"i=0; while [ ! -e {tmp_path}/{other} ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done"
        return Probe(name=me, command=f"touch {tmp_path}/{me}; {wait}; test -e {tmp_path}/{other} && echo saw")

    facts = gather("n1", [probe("a", "b"), probe("b", "a")], run_local)
    assert facts.sections["a"].stdout == "saw\n" and facts.sections["b"].stdout == "saw\n"


@pytest.mark.parametrize(
    "raw",
    [b"garbage", b"@@PROVISION a 0 10 0\nshort", b"@@PROVISION a 0 1 0\nxtrailing", b"@@PROVISION a x 1 0\nx"],
)
def test_bad_framing_raises_gather_error(raw: bytes) -> None:
    with pytest.raises(GatherError):
        split_sections(raw)


def test_framing_helper_matches_parser() -> None:
    raw = framed({"a": (0, "1\n", ""), "b": (2, "", "boom\n")})
    got = split_sections(raw)
    assert got["b"].rc == 2 and got["b"].stderr == "boom\n" and got["a"].stdout == "1\n"


def test_probe_names_must_be_frameable() -> None:
    with pytest.raises(ValueError, match="characters"):
        build_script([Probe(name="has space", command="true")])


@pytest.mark.parametrize("level", list(Level))
def test_spec_probes_form_a_valid_posix_script(level: Level) -> None:
    probes = node_probes(spec(), level)
    names = [p.name for p in probes]
    assert len(names) == len(set(names))
    script = build_script(probes)
    check = subprocess.run(["sh", "-n"], input=script.encode(), capture_output=True, timeout=10)
    assert check.returncode == 0, check.stderr


def test_full_level_gathers_more_than_quick() -> None:
    quick = {p.name for p in node_probes(spec(), Level.QUICK)}
    full = {p.name for p in node_probes(spec(), Level.FULL)}
    burnin = {p.name for p in node_probes(spec(), Level.BURNIN)}
    assert quick < full == burnin  # the burn-in measurements run after the gather, planned from it (burnin_run)
    assert {"nvidia_smi_nvlink", "dmidecode_memory", "nvme_smart"} <= full - quick


def test_ssh_argv_keeps_host_key_checking_on(tmp_path: Path) -> None:
    ssh = SshEndpoint(host="10.203.1.2", port=2222, user="root", key_file=tmp_path / "key",
                      known_hosts=tmp_path / "known_hosts", common_args="-o ServerAliveInterval=5")
    argv = ssh_argv(ssh, tmp_path)
    joined = " ".join(argv)
    assert "StrictHostKeyChecking=yes" in joined and "StrictHostKeyChecking=no" not in joined
    assert f"UserKnownHostsFile={tmp_path / 'known_hosts'}" in joined
    assert "BatchMode=yes" in joined and "ControlMaster=auto" in joined and f"ControlPath={tmp_path}/%C" in joined
    assert "ControlPersist=" in joined and "ServerAliveInterval=5" in joined
    assert argv[-3:] == ["-l", "root", "10.203.1.2"] and argv[argv.index("-p") + 1] == "2222"


def test_lanes_bound_how_many_probes_run_at_once(tmp_path: Path) -> None:
    def probe(name: str) -> Probe:
        return Probe(name=name, command=f"touch {tmp_path}/{name}.run; sleep 0.6; ls {tmp_path} | grep -c '[.]run$'; "
                                        f"rm {tmp_path}/{name}.run")

    probes = [probe(f"p{i}") for i in range(6)]
    raw = run_local("n1", build_script(probes, lanes=2))
    seen = [int(s.stdout) for s in split_sections(raw).values()]
    assert len(seen) == 6 and max(seen) <= 2
    # With room for all, each probe sees the others start (it waits up to 5 s for them, no timing assert).
    wait = (f"i=0; while [ $(ls {tmp_path} | grep -c '[.]run$') -lt 6 ] && [ $i -lt 50 ]; do sleep 0.1; "
            "i=$((i+1)); done")
    together = [Probe(name=f"q{i}", command=f"touch {tmp_path}/q{i}.run; {wait}; ls {tmp_path} | grep -c '[.]run$'")
                for i in range(6)]
    raw = run_local("n1", build_script(together, lanes=6))
    assert [int(s.stdout) for s in split_sections(raw).values()] == [6] * 6


@pytest.mark.parametrize("shell", [["sh", "-s"], ["bash", "--posix", "-s"], ["bash", "-s"]])
def test_probes_that_exit_hand_their_lane_back_in_every_shell(shell: list[str]) -> None:
    # More probes than lanes, each ending with `exit`: a lane not handed back would hang the script.
    probes = [Probe(name=f"x{i}", command=f"echo {i}; exit {i}") for i in range(5)]
    probes.append(Probe(name="vars", command="_t=/nonexistent; _i=99; _n1=clobbered; echo ok"))
    raw = subprocess.run(shell, input=build_script(probes, lanes=2).encode(), capture_output=True, check=True,
                         timeout=30).stdout
    got = split_sections(raw)
    assert [(s.rc, s.stdout, s.stderr) for s in got.values()] == [(i, f"{i}\n", "") for i in range(5)] + [
        (0, "ok\n", "")]
    assert list(got) == [f"x{i}" for i in range(5)] + ["vars"]


def test_no_probes_gives_no_sections() -> None:
    assert split_sections(run_local("n1", build_script([]))) == {}
