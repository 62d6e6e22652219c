"""Where a vendor or the DHCP server says the BMCs are: pure parsers from text to typed leases.

- CSV (a vendor's shipping list): a header line naming the columns, `ip` required (also `address`,
  `bmc_ip`), `mac` (`bmc_mac`) and `serial` (`serial_number`, `sn`) optional, other columns ignored.
- ISC dhcpd (`dhcpd.leases`, dhcpd.leases(5)): `lease IP { ... hardware ethernet MAC; client-hostname "X"; }`
  blocks, appended as they change: the last block for an address wins; leases whose `binding state` is
  free, expired, released, abandoned or backup are not BMCs that are there now.
- dnsmasq (`dnsmasq.leases`): `EXPIRY MAC IP HOSTNAME CLIENT-ID` per line (`*` for none); the `duid` line
  and DHCPv6 lines (no MAC: an IAID) are skipped.

A malformed line is one InputError naming the file and the line; nothing is sent.
"""

from __future__ import annotations

import csv
import io
import ipaddress
import re
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provision.errors import InputError

_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-]?)[0-9a-fA-F]{2}(\1[0-9a-fA-F]{2}){4}$")
_GONE = {"free", "expired", "released", "abandoned", "backup", "reset"}


class LeaseFormat(StrEnum):
    CSV = "csv"
    DHCPD = "dhcpd"
    DNSMASQ = "dnsmasq"


class Lease(BaseModel):
    """One BMC a file names: its address and what the file says of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ip: str
    mac: str | None = None
    serial: str | None = None
    hostname: str | None = None


def read_leases(path: Path, fmt: LeaseFormat | None = None) -> list[Lease]:
    """The file's leases (format from `fmt`, else guessed from its content); InputError naming the file
    when it cannot be read or parsed."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InputError(f"{path}: cannot read the lease file ({why})") from None
    fmt = fmt or guess_format(text)
    parse = {LeaseFormat.CSV: parse_csv, LeaseFormat.DHCPD: parse_dhcpd, LeaseFormat.DNSMASQ: parse_dnsmasq}[fmt]
    leases = parse(text, str(path))
    if not leases:
        raise InputError(f"{path}: no BMC address in the file (read as {fmt.value})")
    return leases


def guess_format(text: str) -> LeaseFormat:
    """dhcpd when a `lease IP {` block opens, dnsmasq when the first data line is EXPIRY MAC IP ..., else CSV."""
    if re.search(r"^\s*lease\s+\S+\s*\{", text, re.MULTILINE):
        return LeaseFormat.DHCPD
    first = next((ln.split() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")), [])
    if len(first) >= 4 and (first[0] == "duid" or first[0].isdigit()):
        return LeaseFormat.DNSMASQ
    return LeaseFormat.CSV


def mac_of(value: str, where: str) -> str:
    """A MAC as lower-case colon pairs; InputError naming `where` otherwise."""
    value = value.strip()
    if not _MAC.match(value):
        raise InputError(f"{where}: {value!r} is not a MAC address")
    digits = re.sub(r"[:-]", "", value).lower()
    return ":".join(digits[i:i + 2] for i in range(0, 12, 2))


def ip_of(value: str, where: str) -> str:
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        raise InputError(f"{where}: {value.strip()!r} is not an IP address") from None


_COLUMNS = {"ip": ("ip", "address", "bmc_ip", "bmc_address", "ip_address"), "mac": ("mac", "bmc_mac", "mac_address"),
            "serial": ("serial", "serial_number", "serialnumber", "sn")}


def parse_csv(text: str, source: str = "CSV") -> list[Lease]:
    """A header line, then one BMC a line (module docstring)."""
    rows = list(csv.reader(io.StringIO(text)))
    rows = [r for r in rows if any(c.strip() for c in r) and not r[0].lstrip().startswith("#")]
    if not rows:
        return []
    header = [h.strip().lower().replace(" ", "_") for h in rows[0]]
    index = {key: next((header.index(a) for a in aliases if a in header), None) for key, aliases in _COLUMNS.items()}
    ip_col = index["ip"]
    if ip_col is None:
        raise InputError(f"{source}: line 1: no ip column in the header (ip, address or bmc_ip)")
    out: list[Lease] = []
    for n, row in enumerate(rows[1:], start=2):
        where = f"{source}: line {n}"

        def col(key: str, row: list[str] = row) -> str | None:
            i = index[key]
            return row[i].strip() or None if i is not None and i < len(row) else None

        ip = col("ip")
        if ip is None:
            raise InputError(f"{where}: no ip")
        mac = col("mac")
        out.append(Lease(ip=ip_of(ip, where), mac=mac_of(mac, where) if mac else None, serial=col("serial")))
    return _last_per_ip(out)


_BLOCK = re.compile(r"^\s*lease\s+(?P<ip>\S+)\s*\{(?P<body>.*?)^\s*\}", re.MULTILINE | re.DOTALL)


def parse_dhcpd(text: str, source: str = "dhcpd.leases") -> list[Lease]:
    """ISC dhcpd lease blocks (module docstring): the last block per address, active ones only."""
    latest: dict[str, Lease | None] = {}
    for m in _BLOCK.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        where = f"{source}: line {line}"
        ip = ip_of(m["ip"], where)
        body = m["body"]
        state = re.search(r"^\s*binding\s+state\s+(\w+)\s*;", body, re.MULTILINE)
        hw = re.search(r"^\s*hardware\s+ethernet\s+([0-9A-Fa-f:]+)\s*;", body, re.MULTILINE)
        name = re.search(r'^\s*client-hostname\s+"([^"]*)"\s*;', body, re.MULTILINE)
        latest.pop(ip, None)  # the file is a log: the last block for an address is its state now
        gone = state is not None and state.group(1).lower() in _GONE
        latest[ip] = None if gone else Lease(ip=ip, mac=mac_of(hw.group(1), where) if hw else None,
                                             hostname=name.group(1) if name else None)
    return [lease for lease in latest.values() if lease is not None]


def parse_dnsmasq(text: str, source: str = "dnsmasq.leases") -> list[Lease]:
    """dnsmasq's lease lines (module docstring)."""
    out: list[Lease] = []
    for n, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0] == "duid" or line.lstrip().startswith("#"):
            continue
        where = f"{source}: line {n}"
        if len(fields) < 4 or not fields[0].isdigit():
            raise InputError(f"{where}: not EXPIRY MAC IP HOSTNAME CLIENT-ID")
        if ":" in fields[2] and not _MAC.match(fields[1]):  # DHCPv6: IAID, not a MAC
            continue
        out.append(Lease(ip=ip_of(fields[2], where), mac=mac_of(fields[1], where),
                         hostname=None if fields[3] == "*" else fields[3]))
    return _last_per_ip(out)


def _last_per_ip(leases: list[Lease]) -> list[Lease]:
    by_ip: dict[str, Lease] = {}
    for lease in leases:
        by_ip.pop(lease.ip, None)
        by_ip[lease.ip] = lease
    return list(by_ip.values())
