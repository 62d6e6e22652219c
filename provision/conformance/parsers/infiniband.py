"""InfiniBand status tools from infiniband-diags: `ibstat` and `ibstatus`."""

from __future__ import annotations

import re

from provision.conformance.parsers._base import Model, fail, lines_of, present, to_float, to_int, tool_parser

TOOL_IBSTAT = "ibstat"
TOOL_IBSTATUS = "ibstatus"

_CA = re.compile(r"^CA '(?P<name>[^']+)'$")
_PORT = re.compile(r"^Port (?P<number>\d+):$")
_KV = re.compile(r"^(?P<key>[A-Za-z][A-Za-z ._]*?):\s*(?P<value>.*)$")
_DIAG = re.compile(r"^(ibpanic|ibwarn|ibdebug|ibstat):\s*(?P<message>.*)$")


class IbPort(Model):
    """One port of one HCA as `ibstat` shows it."""

    number: int
    state: str
    physical_state: str
    rate_gbps: float
    link_layer: str
    base_lid: int | None
    sm_lid: int | None
    lmc: int | None
    port_guid: str | None
    capability_mask: str | None


class IbCa(Model):
    """One channel adapter (HCA) of `ibstat`."""

    name: str
    ca_type: str
    firmware_version: str
    hardware_version: str | None
    node_guid: str
    system_image_guid: str | None
    ports: tuple[IbPort, ...]


class IbstatReport(Model):
    """All CAs, plus any `ibpanic:`/`ibwarn:` lines the tool printed (it then exits non-zero)."""

    cas: tuple[IbCa, ...]
    errors: tuple[str, ...]


def _port(ca: str, number: int, fields: dict[str, str]) -> IbPort:
    what = f"CA {ca} port {number}"
    for key in ("State", "Physical state", "Rate", "Link layer"):
        if key not in fields:
            fail(TOOL_IBSTAT, f"{what}: missing '{key}' (truncated output?)")
    rate = to_float(TOOL_IBSTAT, f"{what} rate", fields["Rate"])
    if rate is None:
        fail(TOOL_IBSTAT, f"{what}: rate is N/A")
    return IbPort(
        number=number,
        state=fields["State"],
        physical_state=fields["Physical state"],
        rate_gbps=rate,
        link_layer=fields["Link layer"],
        base_lid=to_int(TOOL_IBSTAT, f"{what} base lid", fields.get("Base lid")),
        sm_lid=to_int(TOOL_IBSTAT, f"{what} SM lid", fields.get("SM lid")),
        lmc=to_int(TOOL_IBSTAT, f"{what} LMC", fields.get("LMC")),
        port_guid=present(fields.get("Port GUID")),
        capability_mask=present(fields.get("Capability mask")),
    )


def _ca(name: str, fields: dict[str, str], ports: list[tuple[int, dict[str, str]]]) -> IbCa:
    for key in ("CA type", "Number of ports", "Firmware version", "Node GUID"):
        if key not in fields:
            fail(TOOL_IBSTAT, f"CA {name}: missing '{key}' (truncated output?)")
    declared = to_int(TOOL_IBSTAT, f"CA {name} number of ports", fields["Number of ports"])
    if declared != len(ports):
        fail(TOOL_IBSTAT, f"CA {name}: says {declared} port(s), {len(ports)} listed (truncated output?)")
    return IbCa(
        name=name,
        ca_type=fields["CA type"],
        firmware_version=fields["Firmware version"],
        hardware_version=present(fields.get("Hardware version")),
        node_guid=fields["Node GUID"],
        system_image_guid=present(fields.get("System image GUID")),
        ports=tuple(_port(name, n, f) for n, f in ports),
    )


@tool_parser(TOOL_IBSTAT)
def parse_ibstat(text: str) -> IbstatReport:
    """Parse `ibstat` (all CAs, all ports)."""
    blocks: list[tuple[str, dict[str, str], list[tuple[int, dict[str, str]]]]] = []
    errors: list[str] = []
    in_port = False
    for raw in lines_of(text):
        line = raw.strip()
        if not line:
            continue
        if _DIAG.match(line):
            errors.append(line)
        elif ca := _CA.match(line):
            blocks.append((ca["name"], {}, []))
            in_port = False
        elif not blocks:
            fail(TOOL_IBSTAT, f"unexpected line before the first CA: {line[:120]!r}")
        elif port := _PORT.match(line):
            blocks[-1][2].append((int(port["number"]), {}))
            in_port = True
        elif kv := _KV.match(line):
            _, ca_fields, ports = blocks[-1]
            target = ports[-1][1] if in_port else ca_fields
            target[kv["key"]] = kv["value"].strip()
        else:
            fail(TOOL_IBSTAT, f"unexpected line {line[:120]!r}")
    if not blocks:
        fail(TOOL_IBSTAT, "no CA found" + (f": {errors[0]}" if errors else ""))
    return IbstatReport(cas=tuple(_ca(*b) for b in blocks), errors=tuple(errors))


class IbStatusPort(Model):
    """One `Infiniband device 'X' port N status:` block of `ibstatus`."""

    device: str
    port: int
    default_gid: str | None
    base_lid: int | None
    sm_lid: int | None
    state: str
    state_code: int
    physical_state: str
    physical_state_code: int
    rate_gbps: float
    rate_detail: str | None
    link_layer: str


_STATUS_HEADER = re.compile(r"^Infiniband device '(?P<dev>[^']+)' port (?P<port>\d+) status:$")
_CODED = re.compile(r"^(?P<code>\d+):\s*(?P<name>\S.*)$")
_RATE = re.compile(r"^(?P<rate>\d+(?:\.\d+)?) Gb/sec(?: \((?P<detail>[^)]*)\))?$")


def _coded(what: str, value: str) -> tuple[int, str]:
    match = _CODED.match(value)
    if not match:
        fail(TOOL_IBSTATUS, f"{what}: expected 'N: NAME', got {value!r}")
    return int(match["code"]), match["name"].strip()


def _status_port(device: str, port: int, fields: dict[str, str]) -> IbStatusPort:
    what = f"{device} port {port}"
    for key in ("state", "phys state", "rate", "link_layer"):
        if key not in fields:
            fail(TOOL_IBSTATUS, f"{what}: missing '{key}' (truncated output?)")
    state_code, state = _coded(f"{what} state", fields["state"])
    phys_code, phys = _coded(f"{what} phys state", fields["phys state"])
    rate = _RATE.match(fields["rate"])
    if not rate:
        fail(TOOL_IBSTATUS, f"{what}: rate {fields['rate']!r} is not 'N Gb/sec (...)'")
    return IbStatusPort(
        device=device,
        port=port,
        default_gid=present(fields.get("default gid")),
        base_lid=to_int(TOOL_IBSTATUS, f"{what} base lid", fields.get("base lid"), base=16),
        sm_lid=to_int(TOOL_IBSTATUS, f"{what} sm lid", fields.get("sm lid"), base=16),
        state=state,
        state_code=state_code,
        physical_state=phys,
        physical_state_code=phys_code,
        rate_gbps=float(rate["rate"]),
        rate_detail=rate["detail"],
        link_layer=fields["link_layer"],
    )


@tool_parser(TOOL_IBSTATUS)
def parse_ibstatus(text: str) -> tuple[IbStatusPort, ...]:
    """Parse `ibstatus` (one block per device port)."""
    blocks: list[tuple[str, int, dict[str, str]]] = []
    for raw in lines_of(text):
        line = raw.strip()
        if not line:
            continue
        if header := _STATUS_HEADER.match(line):
            blocks.append((header["dev"], int(header["port"]), {}))
        elif blocks and (kv := _KV.match(line)):
            blocks[-1][2][kv["key"]] = kv["value"].strip()
        else:
            fail(TOOL_IBSTATUS, f"unexpected line {line[:120]!r}")
    if not blocks:
        fail(TOOL_IBSTATUS, "no 'Infiniband device ... status:' block")
    return tuple(_status_port(*b) for b in blocks)
