"""The simulator's Bios.ResetBios: factory values staged, applied at the next host reset; SEL ClearLog."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_bmcsim_bmc import SYS, body, call, make_bmc, run, until


def _attr(bmc, system: str, name: str):  # type: ignore[no-untyped-def]
    return body(call(bmc, "GET", f"{system}/Bios"))["Attributes"][name]


def test_reset_bios_stages_the_factory_values_until_the_host_reset(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path, "dell", as_captured=True)
        system = "/redfish/v1/Systems/System.Embedded.1"
        before = _attr(bmc, system, "LogicalProc")
        changed = "Disabled" if before == "Enabled" else "Enabled"
        call(bmc, "PATCH", f"{system}/Bios/Settings", {"Attributes": {"LogicalProc": changed}})
        call(bmc, "POST", f"{system}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
        await until(lambda: _attr(bmc, system, "LogicalProc") == changed)
        reply = call(bmc, "POST", f"{system}/Bios/Actions/Bios.ResetBios", {})
        assert reply.status < 300
        assert _attr(bmc, system, "LogicalProc") == changed  # pending until the host resets
        assert body(call(bmc, "GET", f"{system}/Bios/Settings"))["Attributes"] == {"LogicalProc": before}
        call(bmc, "POST", f"{system}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
        await until(lambda: _attr(bmc, system, "LogicalProc") == before)
    run(go)


def test_reset_bios_without_changes_stages_nothing_and_clear_log_empties_the_sel(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path)
        target = next(u for u, (owner, name) in bmc.seed.tree.action_targets.items() if name == "Bios.ResetBios")
        assert call(bmc, "POST", target, {}).status < 300
        assert bmc.bios[SYS].pending() == {}
        assert bmc.sel_messages()  # the request is logged
        service = bmc.sel.entries.rsplit("/", 1)[0]
        clear = next(u for u, (owner, name) in bmc.seed.tree.action_targets.items()
                     if name == "LogService.ClearLog" and owner.rstrip("/") == service)
        assert call(bmc, "POST", clear, {}).status < 300
        assert bmc.sel_messages() == []
    run(go)
