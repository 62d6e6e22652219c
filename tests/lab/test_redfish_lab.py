"""The Redfish layer against the lab BMC simulator, on every captured tree, with no vendor branch here.

One lab per tree (3 BMC-only nodes): node01 converges firmware + BIOS from a wrong state in one host
reset, node02 does BIOS alone, node03 takes the faults (Supermicro tree only; faults are tree-independent).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from provision.cli import main as cli_main
from provision.errors import RedfishError
from provision.lab import manager
from provision.lab.bmcsim.images import build_image
from provision.redfish.connector import Connector
from provision.redfish.errors import RedfishOperationFailed, RedfishTimeout, RedfishUnavailable
from provision.redfish.ops import bios as bios_ops
from provision.redfish.ops import converge
from provision.redfish.ops import firmware as fw
from provision.redfish.ops import inventory as inv_ops
from provision.redfish.ops import sel as sel_ops
from provision.redfish.ops.session import Node, node_facts, options_for
from provision.redfish.ops.waiting import Clock
from provision.redfish.retry import RetryPolicy
from provision.spec import load_fleet
from provision.spec.fleet import HostEntry
from provision.spec.model import NodeSpec

pytestmark = [pytest.mark.lab, pytest.mark.timeout(900)]
TREES = ["supermicro", "dell", "public-rackmount1"]
FAST = Clock(poll_s=0.2)
_OPEN: list[Connector] = []  # sessions the tests opened; logged out before the lab goes down
OPTS = converge.ConvergeOptions(bmc_reset_timeout_s=120, host_reset_timeout_s=120, verify_timeout_s=60)


@dataclass
class Lab:
    tree: str
    dir: Path
    inventory: Path

    def host(self, name: str) -> HostEntry:
        return load_fleet(self.inventory).hosts[name]

    def fault(self, node: str, kind: str, value: float | None = None, clear: bool = False) -> None:
        manager.fault(self.dir, node, kind, clear, value)


def _lab_images(lab_dir: Path, inventory: Path) -> None:
    """Images in the simulator's format for the baseline, and the baseline pointed at them."""
    profile = inventory.parent / "group_vars" / "all" / "profile_ml_prod_v4.yml"
    data = yaml.safe_load(profile.read_text())
    spec = data["provision_profile_ml_prod_v4"]
    (lab_dir / "firmware").mkdir(exist_ok=True)
    for comp in spec["firmware"]:
        blob = build_image(comp["component"].upper(), comp["version"])
        path = lab_dir / "firmware" / f"{comp['component']}_{comp['version']}.bin"
        path.write_bytes(blob)
        comp["image"], comp["sha256"] = str(path), hashlib.sha256(blob).hexdigest()
    profile.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture(scope="module", params=TREES)
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tree = request.param
    lab_dir = tmp_path_factory.mktemp(f"rflab-{tree}")
    root = Path(__file__).resolve().parents[2]
    try:
        state = manager.up(manager.UpOptions(lab_dir=lab_dir, nodes=3, bmc_tree=Path(tree), bmc_only=True,
                                             speed=20.0, source_inventory=root / "inventory" / "hosts.yml"))
        _lab_images(lab_dir, state.inventory)
        yield Lab(tree=tree, dir=lab_dir, inventory=state.inventory)
    finally:
        while _OPEN:
            _OPEN.pop().close()
        manager.down(lab_dir)


@pytest.fixture(scope="module")
def fault_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """One Supermicro node for the fault tests (faults live in the simulator core, not in a tree)."""
    lab_dir = tmp_path_factory.mktemp("rflab-faults")
    root = Path(__file__).resolve().parents[2]
    try:
        state = manager.up(manager.UpOptions(lab_dir=lab_dir, nodes=1, bmc_tree=Path("supermicro"), bmc_only=True,
                                             speed=20.0, source_inventory=root / "inventory" / "hosts.yml"))
        _lab_images(lab_dir, state.inventory)
        yield Lab(tree="supermicro", dir=lab_dir, inventory=state.inventory)
    finally:
        while _OPEN:
            _OPEN.pop().close()
        manager.down(lab_dir)


def _node(lab: Lab, name: str, retry: RetryPolicy | None = None) -> tuple[NodeSpec, Node]:
    host = lab.host(name)
    conn = Connector(options_for(name, host.bmc, retry=retry or RetryPolicy(attempts=4, base_delay_s=0.2)))
    conn.open()
    _OPEN.append(conn)
    return host.spec, node_facts(conn)


def _flipped(spec: NodeSpec, node: Node) -> NodeSpec:
    """The spec with every enabled/disabled BIOS value inverted where this BIOS's registry allows it:
    a wrong state to start from (the Dell registry, for one, makes ProcTurboMode read-only)."""
    flip = {"enabled": "disabled", "disabled": "enabled"}
    settings = {k: flip.get(str(v), v) for k, v in spec.bios.settings.items()}
    wrong = spec.model_copy(update={"bios": spec.bios.model_copy(update={"settings": settings})})
    refused = {line.split(" ", 1)[0] for line in bios_ops.plan(wrong.bios, bios_ops.observe(node), node.vendor).invalid}
    settings = {k: (spec.bios.settings[k] if k in refused else v) for k, v in settings.items()}
    return spec.model_copy(update={"bios": spec.bios.model_copy(update={"settings": settings})})


def _resets(node: Node) -> int:
    return sum(1 for e in sel_ops.read(node) if "Host reset requested" in (e.message or ""))


# ---- inventory ---------------------------------------------------------------------------------
def test_inventory_cli_json(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["bmc", "inventory", "node01", "-i", str(lab.inventory), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code in (0, 1)  # 1 = drift found; the report is there either way
    assert out["drift"] and len(out["inventory"]["gpus"]) == 8
    assert len(out["inventory"]["cpus"]) >= 1 and out["inventory"]["firmware"]
    if lab.tree == "supermicro":
        assert all("H100 80GB HBM3" in g["model"] for g in out["inventory"]["gpus"])
        assert len(out["inventory"]["cpus"]) == 2 and len(out["inventory"]["memory"]) == 32
        assert len(out["inventory"]["drives"]) == 10
        verdicts = {d["key"]: d["verdict"] for d in out["drift"]}
        assert verdicts["gpu.count"] == verdicts["cpu.model"] == verdicts["memory.total_gb"] == "ok"


# ---- BIOS --------------------------------------------------------------------------------------
def test_bios_converges_in_one_reset_and_replans_nothing(lab: Lab) -> None:
    spec, node = _node(lab, "node02")
    wrong = _flipped(spec, node)
    opts = OPTS.model_copy(update={"firmware": False})
    converge.apply(node, wrong, converge.make_plan(node, wrong, lab.inventory.parent, opts), opts, FAST)
    before = _resets(node)
    cplan = converge.make_plan(node, spec, lab.inventory.parent, opts)
    assert cplan.bios is not None and cplan.bios.changes and not cplan.bios.invalid
    result = converge.apply(node, spec, cplan, opts, FAST)
    assert result.host_resets == 1 and result.bios_written
    assert _resets(node) == before + 1
    again = converge.make_plan(node, spec, lab.inventory.parent, opts)
    assert again.bios is not None and again.bios.changes == []


# ---- firmware + BIOS together ------------------------------------------------------------------
def test_firmware_and_bios_converge_with_one_host_reset(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    spec, node = _node(lab, "node01")
    wrong = _flipped(spec, node)
    opts_bios = OPTS.model_copy(update={"firmware": False})
    converge.apply(node, wrong, converge.make_plan(node, wrong, lab.inventory.parent, opts_bios), opts_bios, FAST)
    cplan = converge.make_plan(node, spec, lab.inventory.parent, OPTS)
    before = _resets(node)
    if lab.tree == "public-rackmount1":
        # DMTF's mockup BMC reports '1.45.455b66-rev4', a build id no version scheme orders against the baseline's
        # 11.02.05: it is never flashed as "older"; the update refuses in one line naming both, and sends nothing
        assert "'1.45.455b66-rev4'" in cplan.firmware.incomparable["bmc"], cplan.firmware.incomparable
        with pytest.raises(RedfishOperationFailed, match=r"nothing sent: .*cannot compare"):
            converge.apply(node, spec, cplan, OPTS, FAST)
        assert _resets(node) == before and converge.make_plan(node, spec, lab.inventory.parent, OPTS) == cplan
        return
    assert cplan.firmware.steps and cplan.firmware.steps[0].component == "bmc"
    result = converge.apply(node, spec, cplan, OPTS, FAST)
    assert result.host_resets == 1 and result.verified
    _, node = _node(lab, "node01")  # a fresh session: the BMC rebooted on its new image
    assert _resets(node) == before + 1
    again = converge.make_plan(node, spec, lab.inventory.parent, OPTS)
    assert again.empty, again
    code = cli_main(["firmware", "update", "node01", "-i", str(lab.inventory), "--json"])
    out = json.loads(capsys.readouterr().out)
    # the Dell and DMTF trees carry no HGX baseboard: their GPU and NVSwitch firmware cannot be checked, which
    # is exit 3 naming both (never "at baseline"); the HGX tree has every component
    absent = [] if lab.tree == "supermicro" else ["gpu", "nvswitch"]
    assert out["plan"]["firmware"]["absent"] == absent, out
    assert code == (3 if absent else 0) and out["applied"] is False and out["plan"]["firmware"]["steps"] == [], out


def test_downgrade_refused_unless_allowed(lab: Lab) -> None:
    spec, node = _node(lab, "node01")
    old = tuple(c.model_copy(update={"version": "1.0"}) if c.component == "bios" else c for c in spec.firmware)
    fplan = fw.plan(old, fw.observe(node.conn), node.vendor, lab.inventory.parent)
    assert any(r.startswith("bios:") for r in fplan.refused) and not any(s.component == "bios" for s in fplan.steps)
    allowed = fw.plan(old, fw.observe(node.conn), node.vendor, lab.inventory.parent, allow_downgrade=True)
    assert any(s.component == "bios" and s.downgrade for s in allowed.steps)


# ---- faults (on the fault_lab: faults live in the simulator core, not in a tree) -------------------
@pytest.mark.parametrize(("kind", "value"), [("latency", 200.0), ("unavailable", 1.0), ("session-expiry", None)])
def test_inventory_survives_fault(fault_lab: Lab, kind: str, value: float | None) -> None:
    lab = fault_lab
    _, node = _node(lab, "node01")
    lab.fault("node01", kind, value)
    try:
        if kind == "unavailable":  # clear it from the side while the client backs off and retries
            import threading

            threading.Timer(1.5, lambda: lab.fault("node01", kind, clear=True)).start()
        inv = inv_ops.observe(node.conn)
    finally:
        if kind != "session-expiry":
            lab.fault("node01", kind, clear=True)
    assert len(inv.gpus) == 8 and len(inv.cpus) == 2


def test_inventory_against_dropping_bmc_is_clear_error(fault_lab: Lab) -> None:
    lab = fault_lab
    _, node = _node(lab, "node01", retry=RetryPolicy(attempts=2, base_delay_s=0.1, timeout_s=3))
    lab.fault("node01", "drop")
    try:
        with pytest.raises(RedfishUnavailable, match="node01 BMC"):
            inv_ops.observe(node.conn)
    finally:
        lab.fault("node01", "drop", clear=True)


def test_bios_stuck_pending_is_error_naming_attributes(fault_lab: Lab) -> None:
    lab = fault_lab
    spec, node = _node(lab, "node01")
    wrong = _flipped(spec, node)
    opts = OPTS.model_copy(update={"firmware": False, "verify_timeout_s": 2})
    lab.fault("node01", "bios-stuck-pending")
    try:
        cplan = converge.make_plan(node, wrong, lab.inventory.parent, opts)
        with pytest.raises(RedfishOperationFailed, match="still pending after the host reset") as err:
            converge.apply(node, wrong, cplan, opts, FAST)
        assert cplan.bios is not None and all(c.attribute in str(err.value) for c in cplan.bios.changes)
    finally:
        lab.fault("node01", "bios-stuck-pending", clear=True)
    # known state: the values are still pending; the next reset applies them and the plan empties
    result = converge.apply(node, wrong, converge.make_plan(node, wrong, lab.inventory.parent, opts), opts, FAST)
    assert result.bios_written == [] and result.host_resets == 1
    assert converge.make_plan(node, wrong, lab.inventory.parent, opts).bios.changes == []  # type: ignore[union-attr]


def _bios_step(lab: Lab, node: Node, spec: NodeSpec, version: str) -> tuple[tuple, fw.FirmwarePlan]:  # type: ignore[type-arg]
    base = tuple(c.model_copy(update={"version": version, "apply_time": "Immediate", "needs_host_reset": False})
                 for c in spec.firmware if c.component == "bios")
    img = lab.dir / "firmware" / f"bios_{version}.bin"
    blob = build_image("BIOS", version)
    img.write_bytes(blob)
    base = (base[0].model_copy(update={"image": str(img), "sha256": hashlib.sha256(blob).hexdigest()}),)
    return base, fw.plan(base, fw.observe(node.conn), node.vendor, lab.inventory.parent, allow_downgrade=True)


@pytest.mark.parametrize("kind", ["task-fail", "update-noop", "bmc-reset-mid-update", "task-stall"])
def test_firmware_fault_is_clear_error_then_retry_succeeds(fault_lab: Lab, kind: str) -> None:
    lab = fault_lab
    spec, node = _node(lab, "node01")
    version = {"task-fail": "3.1", "update-noop": "3.2", "bmc-reset-mid-update": "3.3", "task-stall": "3.4"}[kind]
    base, fplan = _bios_step(lab, node, spec, version)
    assert [s.component for s in fplan.steps] == ["bios"]
    step = fplan.steps[0].model_copy(update={"timeout_s": 8.0})
    opts = OPTS.model_copy(update={"verify_timeout_s": 3})
    lab.fault("node01", kind)
    try:
        with pytest.raises((RedfishOperationFailed, RedfishTimeout)) as err:
            cplan = converge.ConvergePlan(firmware=fw.FirmwarePlan(steps=[step]))
            converge.apply(node, spec.model_copy(update={"firmware": base}), cplan, opts, FAST)
        assert "node01" in str(err.value)
    finally:
        lab.fault("node01", kind, clear=True)
    _, node = _node(lab, "node01")
    rows = fw.status(base, fw.observe(node.conn), node.vendor)
    assert rows[0].verdict in ("older", "newer")  # known state: the old version still runs
    if kind == "task-stall":
        return  # the stalled task may still finish later; the next run re-plans from what runs
    cplan = converge.ConvergePlan(firmware=fw.FirmwarePlan(steps=[step]))
    converge.apply(node, spec.model_copy(update={"firmware": base}), cplan, opts, FAST)
    assert fw.status(base, fw.observe(node.conn), node.vendor)[0].verdict == "ok"


def test_session_expiry_mid_update_relogs_and_succeeds(fault_lab: Lab) -> None:
    lab = fault_lab
    spec, node = _node(lab, "node01")
    base, fplan = _bios_step(lab, node, spec, "3.9")
    lab.fault("node01", "session-expiry")
    converge.apply(node, spec.model_copy(update={"firmware": base}), converge.ConvergePlan(firmware=fplan), OPTS, FAST)
    assert node.conn.stats.relogins >= 1
    assert fw.status(base, fw.observe(node.conn), node.vendor)[0].verdict == "ok"


def test_errors_are_one_line_without_secrets(fault_lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    lab = fault_lab
    code = cli_main(["bios", "diff", "nodeXX", "-i", str(lab.inventory)])
    err = capsys.readouterr().err
    assert code == 2 and "nodeXX" in err and "Traceback" not in err
    password = lab.host("node01").bmc.password.get_secret_value()
    lab.fault("node01", "drop")
    try:
        code = cli_main(["sel", "node01", "-i", str(lab.inventory)])
    finally:
        lab.fault("node01", "drop", clear=True)
    captured = capsys.readouterr()
    assert code == 1 and "node01" in captured.err and password not in captured.err + captured.out


# ---- power, boot override, virtual media, SEL ----------------------------------------------------
def test_power_off_on_cycle_wait_for_state(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    inv = str(lab.inventory)
    assert cli_main(["power", "node02", "off", "-i", inv, "--plan"]) == 0
    assert "would send" in capsys.readouterr().out
    assert cli_main(["power", "node02", "off", "-i", inv]) == 0
    assert "now Off" in capsys.readouterr().out
    assert cli_main(["power", "node02", "off", "-i", inv]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert cli_main(["power", "node02", "on", "-i", inv]) == 0
    assert "now On" in capsys.readouterr().out
    assert cli_main(["power", "node02", "cycle", "-i", inv]) == 0
    assert "now On" in capsys.readouterr().out


def test_boot_once_and_virtual_media(lab: Lab, tmp_path: Path) -> None:
    from provision.redfish.image_server import ImageServer
    from provision.redfish.ops import power

    _, node = _node(lab, "node02")
    power.boot_once(node, "Pxe")
    boot = node.conn.get(node.system.uri)["Boot"]
    assert (boot["BootSourceOverrideEnabled"], boot["BootSourceOverrideTarget"]) == ("Once", "Pxe")
    iso, other = tmp_path / "installer.iso", tmp_path / "other.iso"
    iso.write_bytes(b"\0" * 1024)
    other.write_bytes(b"\1" * 1024)
    try:
        with ImageServer() as srv:
            uri = power.virtual_media(node, srv.url_for(other))
            insert = node.conn.get(uri)["Actions"]["#VirtualMedia.InsertMedia"]["target"]
            with pytest.raises(RedfishError, match="409"):  # the simulator, as iDRAC, refuses a full drive
                node.conn.post(insert, {"Image": srv.url_for(iso), "Inserted": True})
            assert power.virtual_media(node, srv.url_for(iso)) == uri  # ejected first, then inserted
    except RedfishError as exc:  # a tree with no CD/DVD media at all must say so clearly
        assert "no CD/DVD virtual media" in str(exc)
        return
    media = node.conn.get(uri)
    assert media["Inserted"] is True and media["Image"].endswith("installer.iso")
    power.virtual_media(node, None)
    assert node.conn.get(uri)["Inserted"] is False


def test_sel_read_and_clear(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    _, node = _node(lab, "node02")
    assert sel_ops.read(node), "the lab SEL records power and BIOS events"
    assert cli_main(["sel", "node02", "-i", str(lab.inventory), "--clear", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cleared"] is True and out["entries"]
    assert len(sel_ops.read(node)) <= 1  # some BMCs log the clearing itself
