"""`ibv_devinfo` (rdma-core): HCAs and their ports as libibverbs sees them.

rdma-core's devinfo.c prints `hca_id:`, tab-indented `key:<tabs>value` device fields, then one
`port:<tab>N` block per port. Tested on real rdma-core 44 output (a Soft-RoCE device in a qemu
VM) and a hand-written two-HCA sample; no ConnectX capture was available. Extra keys and flag
lines printed by `-v` are accepted and ignored.
"""

from __future__ import annotations

import re

from provision.conformance.parsers._base import Model, fail, lines_of, present, to_int, tool_parser

TOOL = "ibv_devinfo"

_KV = re.compile(r"^(?P<key>[A-Za-z_][\w\[\] .-]*?):\s*(?P<value>.*)$")
_CODED = re.compile(r"^(?P<name>\S+)\s*\((?P<code>\d+)\)$")
_NO_DEVICES = "No IB devices found"


class IbvPort(Model):
    """One `port:` block."""

    port: int
    state: str
    state_code: int
    max_mtu: int | None
    active_mtu: int | None
    sm_lid: int | None
    port_lid: int | None
    port_lmc: int | None
    link_layer: str


class IbvDevice(Model):
    """One `hca_id:` block."""

    hca_id: str
    transport: str | None
    fw_ver: str
    node_guid: str
    sys_image_guid: str | None
    vendor_id: int | None
    vendor_part_id: int | None
    hw_ver: str | None
    board_id: str | None
    ports: tuple[IbvPort, ...]


def _coded(what: str, value: str | None) -> tuple[str, int] | None:
    if value is None:
        return None
    match = _CODED.match(value.strip())
    if not match:
        fail(TOOL, f"{what}: expected 'NAME (N)', got {value!r}")
    return match["name"], int(match["code"])


def _mtu(what: str, value: str | None) -> int | None:
    coded = _coded(what, value)
    return None if coded is None else to_int(TOOL, what, coded[0])


def _port(hca: str, number: int, fields: dict[str, str]) -> IbvPort:
    what = f"{hca} port {number}"
    for key in ("state", "link_layer"):
        if key not in fields:
            fail(TOOL, f"{what}: missing '{key}' (truncated output?)")
    state = _coded(f"{what} state", fields["state"])
    assert state is not None
    return IbvPort(
        port=number,
        state=state[0],
        state_code=state[1],
        max_mtu=_mtu(f"{what} max_mtu", fields.get("max_mtu")),
        active_mtu=_mtu(f"{what} active_mtu", fields.get("active_mtu")),
        sm_lid=to_int(TOOL, f"{what} sm_lid", fields.get("sm_lid"), base=0),
        port_lid=to_int(TOOL, f"{what} port_lid", fields.get("port_lid"), base=0),
        port_lmc=to_int(TOOL, f"{what} port_lmc", fields.get("port_lmc"), base=16),
        link_layer=fields["link_layer"],
    )


def _device(hca: str, fields: dict[str, str], ports: list[tuple[int, dict[str, str]]]) -> IbvDevice:
    for key in ("fw_ver", "node_guid", "phys_port_cnt"):
        if key not in fields:
            fail(TOOL, f"{hca}: missing '{key}' (truncated output?)")
    declared = to_int(TOOL, f"{hca} phys_port_cnt", fields["phys_port_cnt"])
    if declared != len(ports):
        fail(TOOL, f"{hca}: phys_port_cnt {declared} but {len(ports)} port block(s) (truncated output?)")
    return IbvDevice(
        hca_id=hca,
        transport=present(fields.get("transport")),
        fw_ver=fields["fw_ver"],
        node_guid=fields["node_guid"],
        sys_image_guid=present(fields.get("sys_image_guid")),
        vendor_id=to_int(TOOL, f"{hca} vendor_id", fields.get("vendor_id"), base=0),
        vendor_part_id=to_int(TOOL, f"{hca} vendor_part_id", fields.get("vendor_part_id"), base=0),
        hw_ver=present(fields.get("hw_ver")),
        board_id=present(fields.get("board_id")),
        ports=tuple(_port(hca, n, f) for n, f in ports),
    )


@tool_parser(TOOL)
def parse_ibv_devinfo(text: str) -> tuple[IbvDevice, ...]:
    """Parse `ibv_devinfo` (optionally `-v`); "No IB devices found" gives an empty tuple."""
    blocks: list[tuple[str, dict[str, str], list[tuple[int, dict[str, str]]]]] = []
    for raw in lines_of(text):
        line = raw.strip()
        if not line or line == "Device ports:":
            continue
        if line == _NO_DEVICES and not blocks:
            return ()
        kv = _KV.match(line)
        if kv is None:
            if not blocks or not raw[:1].isspace():
                fail(TOOL, f"unexpected line {line[:120]!r}")
            continue  # a flag line printed under a -v key
        key, value = kv["key"], kv["value"].strip()
        if key == "hca_id":
            blocks.append((value, {}, []))
        elif not blocks:
            fail(TOOL, f"unexpected line before the first hca_id: {line[:120]!r}")
        elif key == "port":
            number = to_int(TOOL, f"{blocks[-1][0]} port number", value)
            blocks[-1][2].append((number if number is not None else -1, {}))
        else:
            target = blocks[-1][2][-1][1] if blocks[-1][2] else blocks[-1][1]
            target.setdefault(key, value)
    if not blocks:
        fail(TOOL, "no 'hca_id:' block")
    return tuple(_device(*b) for b in blocks)
