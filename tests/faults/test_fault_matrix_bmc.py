"""Fault matrix, BMC side: every BMC fault kind of the lab against the bring-up stages that talk to the BMC
(preflight, firmware, bios, reset) and a campaign wave. One BMC-only lab for the module; every cell takes a
node nobody touched yet, so each starts from the lab's deliberately wrong state (old firmware, wrong BIOS).

Writes its section of docs/fault-matrix.md when every cell ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import pytest
import requests
import yaml
from pydantic import SecretStr

from provision.conformance.bmc_source import OwnSession, check_bmc
from provision.conformance.checks._base import Context
from provision.conformance.facts import NodeFacts
from provision.conformance.model import Level, NodeReport, Outcome, RunReport
from provision.lab import manager
from provision.lab.campaign_kit import write_lab_campaign
from provision.spec import load_fleet
from provision.spec.fleet import HostEntry
from tests.faults.faultkit import (
    EITHER,
    FAILED_CLEANLY,
    RECOVERED,
    ROOT,
    Fault,
    FaultLab,
    Row,
    classify,
    injected,
    journal_check,
    one_line,
    run_stages,
    write_section,
)

pytestmark = pytest.mark.lab
SPEED = 60.0
BASE_FW = {"bmc": "11.02.05", "bios": "2.1", "gpu": "96.00.9F.00.04"}
OLD_BMC = "11.01.01"


@dataclass(frozen=True)
class Cell:
    stage: str
    fault: Fault
    expected: str
    rerun: bool = False  # clear the fault and run the stage again
    gap: str = ""  # a known gap: the reason, shown in the matrix
    note: str = ""  # why the outcome is what it is, shown in the matrix

    @property
    def id(self) -> str:
        return f"{self.stage}-{self.fault.kind}-{'t' if self.fault.clear_after is not None else 'p'}"


CELLS: tuple[Cell, ...] = (
    # preflight: reads the whole hardware inventory
    Cell("preflight", Fault("latency", 150), RECOVERED),
    Cell("preflight", Fault("unavailable", 1, clear_after=2.5), RECOVERED),
    Cell("preflight", Fault("unavailable", 1), FAILED_CLEANLY, rerun=True),
    Cell("preflight", Fault("drop", clear_after=2.0), RECOVERED),
    Cell("preflight", Fault("drop"), FAILED_CLEANLY, rerun=True),
    Cell("preflight", Fault("session-expiry", on="login"), RECOVERED),
    # firmware: the BMC flashed and verified, the rest staged for the host reset
    Cell("firmware", Fault("latency", 150), RECOVERED),
    Cell("firmware", Fault("unavailable", 1, on="task.start", clear_after=2.5), RECOVERED),
    Cell("firmware", Fault("drop", on="task.start", clear_after=2.0), RECOVERED),
    Cell("firmware", Fault("session-expiry", on="task.start"), RECOVERED),
    Cell("firmware", Fault("task-stall", 50, clear_after=4.0), RECOVERED),
    Cell("firmware", Fault("task-stall", 50), FAILED_CLEANLY, rerun=True),
    Cell("firmware", Fault("task-fail", 50), FAILED_CLEANLY, rerun=True),
    Cell("firmware", Fault("update-noop"), FAILED_CLEANLY, rerun=True),
    Cell("firmware", Fault("bmc-reset-mid-update"), FAILED_CLEANLY, rerun=True),
    # bios: attributes written to the pending resource
    Cell("bios", Fault("latency", 150), RECOVERED),
    Cell("bios", Fault("unavailable", 1, clear_after=2.5), RECOVERED),
    Cell("bios", Fault("drop"), FAILED_CLEANLY, rerun=True),
    Cell("bios", Fault("session-expiry", on="login"), RECOVERED),
    # reset: one host reset for everything staged, then both checked
    Cell("reset", Fault("latency", 150), RECOVERED),
    Cell("reset", Fault("session-expiry", on="power"), RECOVERED),
    Cell("reset", Fault("drop", on="power", clear_after=2.0), RECOVERED),
    Cell("reset", Fault("unavailable", 1, on="power", clear_after=2.5), RECOVERED),
    Cell("reset", Fault("bios-stuck-pending"), FAILED_CLEANLY, rerun=True),
    Cell("reset", Fault("update-noop"), RECOVERED,
         note="the simulator applies the fault when an image is uploaded; these were staged before it"),
    Cell("reset", Fault("bmc-reset-mid-update"), RECOVERED,
         note="no update runs at the reset: the staged images were uploaded before the fault"),
)
ROWS: dict[str, Row] = {}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultLab]:
    workdir = tmp_path_factory.mktemp("faults-bmc")
    nodes = len(CELLS) + len(CAMPAIGN_FAULTS) + 2  # + the campaign's canary + the verify cells' node
    state = manager.up(manager.UpOptions(lab_dir=workdir / "lab", nodes=nodes, bmc_only=True, speed=SPEED,
                                         source_inventory=ROOT / "inventory" / "hosts.yml"))
    try:
        yield FaultLab(state, workdir)
    finally:
        manager.down(workdir / "lab")
    if len(ROWS) == len(CELLS) + len(CAMPAIGN_FAULTS):
        order = [c.id for c in CELLS] + [f"campaign-{f.kind}" for f in CAMPAIGN_FAULTS]
        write_section("bmc", "BMC faults x BMC stages and a campaign wave", INTRO, [ROWS[k] for k in order])


INTRO = (f"BMC-only lab at speed {SPEED:g} (a 60 s simulated flash takes 1 s; deadlines are counted on the "
         "lab's clock). Each cell runs one stage in-process through the bring-up engine on a fresh node "
         "(reset cells first run firmware and bios without a fault). `t` faults clear themselves after the "
         "time shown, `p` faults stay until the stage ends; a fault `at EVENT` is set when the simulator logs "
         "that event for the node. Targets: firmware stage = BMC at 11.02.05 with BIOS/GPU/NVSwitch staged; "
         "reset stage = every component at the baseline and no BIOS setting pending. The end state is read after "
         "the faulty run; the journal column counts the node's rows after the rerun too.")


def _reached(lab: FaultLab, node: str, stage: str) -> bool:
    """The stage's target is true on the BMC itself."""
    fw = lab.firmware(node)
    if stage == "firmware":
        return fw["bmc"] == BASE_FW["bmc"]
    if stage == "bios":
        return len(lab.pending_bios(node)) > 0
    if stage == "reset":
        return all(fw[k] == v for k, v in BASE_FW.items()) and not lab.pending_bios(node)
    return True


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: c.id)
def test_cell(lab: FaultLab, cell: Cell) -> None:
    node = lab.take()
    secrets = lab.secrets()
    if cell.stage == "reset":
        prep = run_stages(lab, node, ["firmware", "bios"], SPEED)
        assert prep.outcome == "applied", prep.error
    with injected(lab.lab_dir, node, cell.fault):
        run = run_stages(lab, node, [cell.stage], SPEED)
    outcome = classify(run, secrets)
    if outcome == RECOVERED and not _reached(lab, node, cell.stage):
        outcome = "BUG: reported success, target not reached on the BMC"
    reason = one_line(run.error) if run.error else f"({run.outcome})"
    end = lab.end_state(node)
    rerun = ""
    if cell.rerun:
        again = run_stages(lab, node, [cell.stage], SPEED)
        ok = classify(again, secrets) == RECOVERED and _reached(lab, node, cell.stage)
        rerun = ("recovered on rerun; " if ok else f"still failing: {one_line(again.error, 80)}; ") + \
            lab.end_state(node)
    jc = journal_check(lab.journal_path, node)
    ROWS[cell.id] = Row(f"{cell.fault.describe()}", cell.stage, outcome if not cell.gap else "known gap",
                        reason, end, jc.summary, rerun, cell.expected, cell.gap or cell.note)
    assert jc.whole, f"journal has open rows: {jc.summary}"
    if cell.gap:
        pytest.xfail(cell.gap)
    assert outcome == cell.expected, f"{cell.id}: {outcome}: {reason}"
    if cell.rerun:
        assert rerun.startswith("recovered"), rerun


# --- a campaign wave: one node per fault, all in the same wave ------------------------------
CAMPAIGN_FAULTS: tuple[Fault, ...] = (
    Fault("latency", 150),
    Fault("unavailable", 1, on="task.start", clear_after=2.5),
    Fault("drop", on="task.start", clear_after=2.0),
    Fault("session-expiry", on="task.start"),
    Fault("task-stall", 50, clear_after=4.0),
    Fault("task-fail", 50),
    Fault("update-noop"),
    Fault("bmc-reset-mid-update"),
    Fault("bios-stuck-pending"),
)
RACED = ("a race decides: the fault is set when the lab's log shows the task start, before or after the "
         "OEM install request that follows the upload; before it, the install is refused (a 503 outlasts the "
         "campaign's 2 flash attempts, FLASH_RETRY in campaign/redfish_updater.py; a connection dropped once the "
         "request was written is never resent), and `campaign resume --retry-failed` takes the node again; after "
         "it, the task polls are retried and the node converges")
CAMPAIGN_EXPECTED = {"task-fail": FAILED_CLEANLY, "update-noop": FAILED_CLEANLY,
                     "bmc-reset-mid-update": FAILED_CLEANLY}


def test_campaign_wave(lab: FaultLab) -> None:
    """A canary without faults, then one wave in which every node has a different fault."""
    canary = lab.take()
    nodes = [lab.take() for _ in CAMPAIGN_FAULTS]
    path = write_lab_campaign(lab.workdir / "campaign", "faultwave",
                              {"waves": {"canary": 1, "batch_size": len(nodes)},
                               "halt": {"max_failures": len(nodes), "max_fail_percentage": 100},
                               "concurrency": len(nodes) + 1})
    doc = yaml.safe_load(path.read_text())
    doc["targets"] = {"hosts": [canary, *nodes]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    journal = lab.workdir / "campaign.db"
    env = {**os.environ, "PROVISION_STATE_DIR": str(lab.workdir / "state")}
    cmd = [sys.executable, "-c", "from provision.cli import run; run()", "campaign", "start", str(path),
           "-i", str(lab.inventory), "--journal", str(journal), "--poll-seconds", "0.2", "--json"]
    with ExitStack() as stack:
        for node, fault in zip(nodes, CAMPAIGN_FAULTS, strict=True):
            stack.enter_context(injected(lab.lab_dir, node, fault))
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=400, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr
    report = subprocess.run([*cmd[:4], "report", "faultwave", "--journal", str(journal), "--json"],
                            capture_output=True, text=True, env=env, timeout=120, check=True)
    by_node = {n["node"]: n for n in json.loads(report.stdout)["nodes"]}
    secrets = lab.secrets()
    failures = []
    for node, fault in zip(nodes, CAMPAIGN_FAULTS, strict=True):
        info = by_node[node]
        error = str(info.get("error") or "")
        if info["outcome"] == "done":
            fw = lab.firmware(node)
            outcome = RECOVERED if all(fw[k] == v for k, v in BASE_FW.items()) else \
                "BUG: done, but not at the baseline"
        elif info["outcome"] == "failed":
            outcome = FAILED_CLEANLY if error and "\n" not in error and not any(s in error for s in secrets) \
                else f"BUG: unclear error {error[:60]!r}"
        else:
            outcome = f"BUG: node left {info['outcome']}"
        expected = CAMPAIGN_EXPECTED.get(fault.kind, RECOVERED)
        note = "campaigns do not touch BIOS settings; the fault is inert" if fault.kind == "bios-stuck-pending" \
            else ""
        shown = outcome
        if fault.on is not None and fault.clear_after is not None and outcome in (RECOVERED, FAILED_CLEANLY):
            expected = shown = EITHER  # the run's own outcome is in the reason column
            note = RACED
        ROWS[f"campaign-{fault.kind}"] = Row(
            fault.describe(), "campaign wave", shown,
            (f"{outcome}: " if shown == EITHER else "") + (one_line(error) or f"({info['outcome']})"),
            lab.end_state(node), f"campaign node row: {info['outcome']}", "", expected, note)
        if shown != expected:
            failures.append(f"{node} {fault.kind}: {outcome} (expected {expected}): {error}")
    assert by_node[canary]["outcome"] == "done"
    assert not failures, failures


# --- verify's BMC-side checks when the BMC cannot be read: error rows, exit 3, never a pass ----------
VERIFY_NODE: list[str] = []  # one node for these cells (they change nothing on it)


def _bmc_rows(host: HostEntry) -> tuple[NodeReport, RunReport]:
    ctx = Context(node=host.name, spec=host.spec, facts=NodeFacts(node=host.name, sections={}), level=Level.FULL)
    check_bmc(ctx, host, OwnSession())
    node = NodeReport(node=host.name, profile=host.profile, results=tuple(ctx.results))
    return node, RunReport(level=Level.FULL, nodes=(node,))


@pytest.mark.parametrize(("case", "label"), [
    ("unavailable", "BMC not reachable"),
    ("wrong password", "BMC refused the credentials"),
    ("TLS failure", "BMC TLS verification failed"),
])
def test_bmc_unreadable_at_verify_is_error_rows_and_exit_3(lab: FaultLab, case: str, label: str) -> None:
    if not VERIFY_NODE:
        VERIFY_NODE.append(lab.take())
    node = VERIFY_NODE[0]
    host = load_fleet(lab.inventory).select([node])[0]
    assert host.bmc is not None
    secrets = [*lab.secrets(), "Wr0ng-pa55word"]
    baseline, _ = _bmc_rows(host)
    assert baseline.results and not baseline.errors, [r.found for r in baseline.errors]  # readable without a fault
    if case == "unavailable":
        with injected(lab.lab_dir, node, Fault("unavailable", 1)):
            report, run = _bmc_rows(host)
    elif case == "wrong password":
        report, run = _bmc_rows(host.model_copy(update={"bmc": host.bmc.model_copy(
            update={"password": SecretStr("Wr0ng-pa55word")})}))
    else:  # a CA bundle that did not sign the lab's certificate (the public roots)
        report, run = _bmc_rows(host.model_copy(update={"bmc": host.bmc.model_copy(
            update={"ca_file": requests.certs.where()})}))
    assert {r.id for r in report.results} == {r.id for r in baseline.results}
    assert {r.outcome for r in report.results} == {Outcome.ERROR}, [(r.id, r.outcome) for r in report.results]
    assert all(r.detail.startswith(label) and "\n" not in r.detail for r in report.results), report.results[0].detail
    assert not any(s in r.model_dump_json() for r in report.results for s in secrets)
    assert (run.exit_code, run.ok) == (3, False)

