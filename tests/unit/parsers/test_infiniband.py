"""ibstat, ibstatus (real captures) and ibv_devinfo (hand-written from the documented format)."""

from __future__ import annotations

import pytest

from provision.conformance.parsers import parse_ibstat, parse_ibstatus, parse_ibv_devinfo
from provision.errors import ParseError

from ._fixtures import text

IB = "infiniband/gpud/"
RXE = "infiniband/qemu-vm/"


def _ports(relpath: str) -> list[tuple[str, str, str, float, str]]:
    report = parse_ibstat(text(IB + relpath))
    return [(ca.name, p.state, p.physical_state, p.rate_gbps, p.link_layer) for ca in report.cas for p in ca.ports]


def test_ibstat_h100_some_down() -> None:
    report = parse_ibstat(text(IB + "ibstat.47.0.h100.some.down.0.txt"))
    assert len(report.cas) == 12
    assert report.errors == ()
    first = report.cas[0]
    assert (first.name, first.ca_type, first.firmware_version) == ("mlx5_0", "MT4129", "28.39.1002")
    assert first.node_guid == "0x946dae0300cde72c"
    port = first.ports[0]
    assert (port.number, port.state, port.physical_state, port.rate_gbps) == (1, "Active", "LinkUp", 400.0)
    assert (port.base_lid, port.sm_lid, port.lmc, port.link_layer) == (75, 334, 0, "InfiniBand")
    assert port.port_guid == "0x946dae0300cde72c"
    ports = _ports("ibstat.47.0.h100.some.down.0.txt")
    down = [p for p in ports if p[1] == "Down"]
    assert len(down) == 3
    assert all(p[2] == "Disabled" and p[3] == 40.0 for p in down)
    assert sum(1 for p in ports if p[3] == 400.0 and p[4] == "InfiniBand") == 8


def test_ibstat_polling_port() -> None:
    ports = _ports("ibstat.47.0.h100.some.down.with.polling.1.txt")
    assert sorted(p[2] for p in ports if p[1] == "Down") == ["Disabled", "Polling"]
    assert {p[4] for p in ports} == {"Ethernet"}


def test_ibstat_h100_all_active_rates() -> None:
    ports = _ports("ibstat.47.0.h100.all.active.2.txt")
    assert len(ports) == 9
    assert all(p[1] == "Active" for p in ports)
    assert sorted(p[3] for p in ports) == [200.0] + [400.0] * 8
    cas = parse_ibstat(text(IB + "ibstat.47.0.h100.all.active.2.txt")).cas
    assert {ca.ca_type for ca in cas} == {"MT4129", "MT41692"}


def test_ibstat_ibpanic_line_kept_as_error() -> None:
    report = parse_ibstat(text(IB + "ibstat.39.0.a100.failed.ibpanic.exit-255.0.txt"))
    assert len(report.cas) == 8
    assert report.errors == ("ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory",)
    assert {ca.ca_type for ca in report.cas} == {"MT4124"}


def test_ibstat_truncated_port() -> None:
    capture = text(IB + "ibstat.47.0.h100.all.active.0.txt")
    with pytest.raises(ParseError, match="missing 'Link layer'"):
        parse_ibstat(capture[: capture.rindex("Link layer")])


def test_ibstatus_a100() -> None:
    ports = parse_ibstatus(text(IB + "ibstatus.39.0.a100.all.active.0.txt"))
    assert [p.device for p in ports] == [f"mlx5_{i}" for i in range(9)]
    assert all(p.rate_gbps == 200.0 and p.link_layer == "InfiniBand" for p in ports[:8])
    assert (ports[8].rate_gbps, ports[8].rate_detail, ports[8].link_layer) == (40.0, "4X QDR", "Ethernet")
    first = ports[0]
    assert (first.state, first.state_code, first.physical_state, first.physical_state_code) == (
        "ACTIVE",
        4,
        "LinkUp",
        5,
    )
    assert (first.rate_gbps, first.rate_detail, first.link_layer) == (200.0, "4X HDR", "InfiniBand")
    assert (first.base_lid, first.sm_lid) == (0x33BF, 1)
    assert first.default_gid == "fe80:0000:0000:0000:0015:5dff:fd34:11eb"


def test_ibv_devinfo_real_soft_roce() -> None:
    (dev,) = parse_ibv_devinfo(text(RXE + "ibv_devinfo.rxe.txt"))
    assert (dev.hca_id, dev.transport, dev.fw_ver) == ("rxe0", "InfiniBand (0)", "0.0.0")
    assert (dev.node_guid, dev.vendor_id, dev.vendor_part_id, dev.board_id) == (
        "5054:00ff:fe12:3456",
        0xFFFFFF,
        0,
        None,
    )
    (port,) = dev.ports
    assert (port.port, port.state, port.state_code, port.link_layer) == (1, "PORT_ACTIVE", 4, "Ethernet")
    assert (port.max_mtu, port.active_mtu, port.port_lmc) == (4096, 1024, 0)
    assert parse_ibv_devinfo(text(RXE + "ibv_devinfo-v.rxe.txt")) == (dev,)  # -v adds keys and flag lines
    (down,) = parse_ibv_devinfo(text(RXE + "ibv_devinfo.rxe.link-down.txt"))
    assert (down.ports[0].state, down.ports[0].state_code) == ("PORT_DOWN", 1)


def test_ibstat_and_ibstatus_real_soft_roce() -> None:
    (ca,) = parse_ibstat(text(RXE + "ibstat.rxe.txt")).cas
    assert (ca.name, ca.ca_type, ca.firmware_version) == ("rxe0", "", "")  # a soft device has neither
    port = ca.ports[0]
    assert (port.state, port.physical_state, port.rate_gbps, port.link_layer) == ("Active", "LinkUp", 2.5, "Ethernet")
    down = parse_ibstat(text(RXE + "ibstat.rxe.link-down.txt")).cas[0].ports[0]
    assert (down.state, down.physical_state) == ("Down", "Disabled")
    (status,) = parse_ibstatus(text(RXE + "ibstatus.rxe.txt"))
    assert (status.device, status.state, status.rate_gbps, status.rate_detail) == ("rxe0", "ACTIVE", 2.5, "1X SDR")
    assert status.default_gid == "fe80:0000:0000:0000:5054:00ff:fe12:3456"


def test_ibv_devinfo_handwritten() -> None:
    devices = parse_ibv_devinfo(text("infiniband/handwritten/ibv_devinfo.2hca.txt"))
    assert [d.hca_id for d in devices] == ["mlx5_0", "mlx5_1"]
    first = devices[0]
    assert (first.fw_ver, first.vendor_id, first.vendor_part_id) == ("28.39.1002", 0x02C9, 4129)
    assert first.ports[0].state == "PORT_ACTIVE" and first.ports[0].state_code == 4
    assert (first.ports[0].active_mtu, first.ports[0].port_lid, first.ports[0].link_layer) == (4096, 75, "InfiniBand")
    assert devices[1].ports[0].state == "PORT_DOWN"


def test_ibv_devinfo_port_count_mismatch() -> None:
    capture = text("infiniband/handwritten/ibv_devinfo.2hca.txt")
    cut = capture[: capture.rindex("\t\tport:")]
    with pytest.raises(ParseError, match="phys_port_cnt 1 but 0"):
        parse_ibv_devinfo(cut)
    assert parse_ibv_devinfo("No IB devices found\n") == ()
