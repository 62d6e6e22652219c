"""`dmidecode` (full, `-t system`, `-t memory`, `-t processor`, `-t cache`): SMBIOS records, typed.

Records start with `Handle 0x..., DMI type N, M bytes`, then a title line, then indented
`Key: Value` fields (list-valued fields continue one level deeper). Memory devices are
counted against their array's `Number Of Devices`, which catches truncated memory output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from provision.conformance.parsers._base import Model, fail, lines_of, present, to_int, tool_parser

TOOL = "dmidecode"

_HANDLE = re.compile(r"^Handle (?P<handle>0x[0-9A-Fa-f]+), DMI type (?P<type>\d+), (?P<size>\d+) bytes$")
_KV = re.compile(r"^(?P<key>[^:]+):\s*(?P<value>.*)$")
_SIZE = re.compile(r"^(?P<num>\d+) (?P<unit>bytes|kB|KB|MB|GB|TB)$")
_SPEED = re.compile(r"^(?P<num>\d+) (?:MT/s|MHz)$")
_MIB = {"bytes": 1 / (1 << 20), "kB": 1 / 1024, "KB": 1 / 1024, "MB": 1, "GB": 1024, "TB": 1024 * 1024}
_LEVEL = re.compile(r"\bLevel (?P<level>\d+)\b")


@dataclass
class _Record:
    handle: str
    type: int
    title: str = ""
    fields: dict[str, str] = field(default_factory=dict)


class SystemInfo(Model):
    """DMI type 1."""

    manufacturer: str | None
    product_name: str | None
    version: str | None
    serial_number: str | None
    uuid: str | None
    sku_number: str | None
    family: str | None


class BaseboardInfo(Model):
    """DMI type 2."""

    manufacturer: str | None
    product_name: str | None
    version: str | None
    serial_number: str | None


class BiosInfo(Model):
    """DMI type 0."""

    vendor: str | None
    version: str | None
    release_date: str | None


class ProcessorInfo(Model):
    """DMI type 4 (one per socket)."""

    socket: str
    manufacturer: str | None
    version: str | None
    status: str | None
    populated: bool
    core_count: int | None
    core_enabled: int | None
    thread_count: int | None
    max_speed_mhz: int | None
    current_speed_mhz: int | None
    """SMBIOS "Current Speed": the speed at boot, which firmware reports as the part's base (nominal) clock."""
    l3_cache_handle: str | None


class CacheInfo(Model):
    """DMI type 7: one cache of one socket (its Installed Size is the socket's whole cache of that level)."""

    handle: str
    designation: str | None
    level: int | None
    """From Configuration (`Enabled, Not Socketed, Level 3`)."""
    installed_kib: int | None


class MemoryArray(Model):
    """DMI type 16."""

    handle: str
    use: str | None
    error_correction: str | None
    maximum_capacity: str | None
    number_of_devices: int | None


class MemoryDevice(Model):
    """DMI type 17 (one per DIMM slot, populated or not)."""

    handle: str
    array_handle: str | None
    locator: str
    bank_locator: str | None
    size_mib: int | None
    type: str | None
    type_detail: str | None
    speed_mts: int | None
    configured_speed_mts: int | None
    manufacturer: str | None
    part_number: str | None
    serial_number: str | None
    rank: int | None
    error_correction: str | None

    @property
    def populated(self) -> bool:
        """A module is installed in this slot."""
        return self.size_mib is not None

    @property
    def slot(self) -> DimmSlot | None:
        """Socket and channel of this slot from its locators, or None when they do not say."""
        return dimm_slot(self.locator, self.bank_locator)


class DimmSlot(Model):
    """Where a DIMM slot sits: its socket and a channel key unique within that socket."""

    socket: int  # 0-based
    channel: str  # e.g. "Node1/Channel0": the firmware's own controller/channel numbering


# The AMI/Intel reference-BIOS bank locator: `P<socket>_Node<n>_Channel<c>_Dimm<d>` (Supermicro X13:
# Node is the socket's memory controller, tests/fixtures/dmidecode/linuxhw/*x13dei*) or
# `_Node<n>_Channel<c>_Dimm<d>` with the socket in the locator (Quanta D54Q: `CPU0_A0`, Node is the socket).
_BANK = re.compile(r"^(?:P(?P<socket>\d+))?_Node(?P<node>\d+)_Channel(?P<channel>\d+)_Dimm(?P<dimm>\d+)$")
# The socket in a locator: `CPU0_A0` (0-based), `P1-DIMMA1` (1-based).
_LOCATOR_SOCKET = (
    (re.compile(r"^CPU(?P<n>\d+)_"), 0),
    (re.compile(r"^P(?P<n>\d+)-DIMM"), 1),
)


def dimm_slot(locator: str, bank_locator: str | None) -> DimmSlot | None:
    """Socket and channel from dmidecode's Locator and Bank Locator (None: these locators carry no channel;
    e.g. HPE's `PROC 1 DIMM 1` with `Bank Locator: Not Specified` maps slots to channels only in HPE's
    population guides)."""
    bank = _BANK.match(bank_locator or "")
    if bank is None:
        return None
    socket = int(bank["socket"]) if bank["socket"] is not None else _locator_socket(locator)
    if socket is None:
        socket = int(bank["node"])  # no socket anywhere: Node is the socket (the Quanta layout)
        return DimmSlot(socket=socket, channel=f"Channel{bank['channel']}")
    return DimmSlot(socket=socket, channel=f"Node{bank['node']}/Channel{bank['channel']}")


def _locator_socket(locator: str) -> int | None:
    for pattern, base in _LOCATOR_SOCKET:
        if match := pattern.match(locator):
            return int(match["n"]) - base
    return None


class DmiReport(Model):
    """The records we check; sections absent from a `-t` run are None or empty."""

    smbios_version: str | None
    bios: BiosInfo | None
    system: SystemInfo | None
    baseboard: BaseboardInfo | None
    processors: tuple[ProcessorInfo, ...]
    caches: tuple[CacheInfo, ...] = ()
    memory_arrays: tuple[MemoryArray, ...]
    memory_devices: tuple[MemoryDevice, ...]

    @property
    def installed_memory_mib(self) -> int:
        """Sum of the sizes of populated DIMMs."""
        return sum(d.size_mib or 0 for d in self.memory_devices)


def _records(text: str) -> list[_Record]:
    records: list[_Record] = []
    list_key: str | None = None
    for raw in lines_of(text):
        line = raw.expandtabs(8)
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if handle := _HANDLE.match(stripped):
            records.append(_Record(handle["handle"], int(handle["type"])))
            list_key = None
            continue
        if not records:
            continue  # preamble: "Getting SMBIOS data...", "SMBIOS 3.5.0 present."
        record = records[-1]
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            if record.title:
                fail(TOOL, f"record {record.handle}: unexpected line {stripped[:80]!r}")
            record.title = stripped
        elif indent <= 8 and (kv := _KV.match(stripped)):
            record.fields[kv["key"].strip()] = kv["value"].strip()
            list_key = kv["key"].strip() if not kv["value"].strip() else None
        elif list_key is None and indent <= 8:
            record.fields.setdefault(stripped, "")  # a bare line, e.g. OEM header dumps
        # deeper lines: items of a list-valued field (Flags, Characteristics...); not kept
    return records


def _size_mib(what: str, value: str | None) -> int | None:
    text = present(value)
    if text is None or text in ("No Module Installed", "None"):
        return None
    match = _SIZE.match(text)
    if not match:
        fail(TOOL, f"{what}: size {text!r} is not 'N MB/GB/TB'")
    return int(int(match["num"]) * _MIB[match["unit"]])


def _size_kib(what: str, value: str | None) -> int | None:
    text = present(value)
    if text is None or text == "None":
        return None
    match = _SIZE.match(text)
    if not match:
        fail(TOOL, f"{what}: size {text!r} is not 'N kB/MB'")
    return round(int(match["num"]) * _MIB[match["unit"]] * 1024)


def _cache(r: _Record) -> CacheInfo:
    level = _LEVEL.search(r.fields.get("Configuration", ""))
    return CacheInfo(handle=r.handle, designation=present(r.fields.get("Socket Designation")),
                     level=int(level["level"]) if level else None,
                     installed_kib=_size_kib(f"cache {r.handle}", _need(r, "Installed Size")))


def _speed(what: str, value: str | None) -> int | None:
    text = present(value)
    if text is None:
        return None
    match = _SPEED.match(text)
    if not match:
        fail(TOOL, f"{what}: speed {text!r} is not 'N MT/s'")
    return int(match["num"])


def _need(record: _Record, key: str) -> str:
    if key not in record.fields:
        fail(TOOL, f"{record.title or 'record'} {record.handle}: missing '{key}' (truncated output?)")
    return record.fields[key]


def _one(records: list[_Record], dmi_type: int) -> _Record | None:
    return next((r for r in records if r.type == dmi_type), None)


def _system(r: _Record) -> SystemInfo:
    f = r.fields
    _need(r, "Manufacturer")
    return SystemInfo(
        manufacturer=present(f.get("Manufacturer")),
        product_name=present(f.get("Product Name")),
        version=present(f.get("Version")),
        serial_number=present(f.get("Serial Number")),
        uuid=present(f.get("UUID")),
        sku_number=present(f.get("SKU Number")),
        family=present(f.get("Family")),
    )


def _processor(r: _Record) -> ProcessorInfo:
    f = r.fields
    what = f"processor {r.handle}"
    status = present(_need(r, "Status"))
    return ProcessorInfo(
        socket=_need(r, "Socket Designation"),
        manufacturer=present(f.get("Manufacturer")),
        version=present(f.get("Version")),
        status=status,
        populated=status is not None and status.startswith("Populated"),
        core_count=to_int(TOOL, what, f.get("Core Count")),
        core_enabled=to_int(TOOL, what, f.get("Core Enabled")),
        thread_count=to_int(TOOL, what, f.get("Thread Count")),
        max_speed_mhz=_speed(what, f.get("Max Speed")),
        current_speed_mhz=_speed(what, f.get("Current Speed")),
        l3_cache_handle=present(f.get("L3 Cache Handle")),
    )


def _array(r: _Record) -> MemoryArray:
    return MemoryArray(
        handle=r.handle,
        use=present(r.fields.get("Use")),
        error_correction=present(_need(r, "Error Correction Type")),
        maximum_capacity=present(r.fields.get("Maximum Capacity")),
        number_of_devices=to_int(TOOL, f"memory array {r.handle}", r.fields.get("Number Of Devices")),
    )


def _dimm(r: _Record, arrays: dict[str, MemoryArray]) -> MemoryDevice:
    f = r.fields
    what = f"memory device {r.handle}"
    array_handle = present(f.get("Array Handle"))
    array = arrays.get(array_handle or "")
    return MemoryDevice(
        handle=r.handle,
        array_handle=array_handle,
        locator=_need(r, "Locator"),
        bank_locator=present(f.get("Bank Locator")),
        size_mib=_size_mib(what, _need(r, "Size")),
        type=present(f.get("Type")),
        type_detail=present(f.get("Type Detail")),
        speed_mts=_speed(what, f.get("Speed")),
        configured_speed_mts=_speed(what, f.get("Configured Memory Speed") or f.get("Configured Clock Speed")),
        manufacturer=present(f.get("Manufacturer")),
        part_number=present(f.get("Part Number")),
        serial_number=present(f.get("Serial Number")),
        rank=to_int(TOOL, what, f.get("Rank")),
        error_correction=array.error_correction if array else None,
    )


def _check_counts(arrays: tuple[MemoryArray, ...], dimms: tuple[MemoryDevice, ...]) -> None:
    for array in arrays:
        found = sum(1 for d in dimms if d.array_handle == array.handle)
        if array.number_of_devices is not None and found != array.number_of_devices:
            fail(
                TOOL,
                f"memory array {array.handle} declares {array.number_of_devices} devices, "
                f"{found} listed (truncated output?)",
            )


@tool_parser(TOOL)
def parse_dmidecode(text: str) -> DmiReport:
    """Parse dmidecode output (any selection of types)."""
    records = _records(text)
    if not records:
        fail(TOOL, "no 'Handle 0x..., DMI type N' record")
    smbios = re.search(r"^SMBIOS (\S+) present", text, re.M)
    bios, system, board = _one(records, 0), _one(records, 1), _one(records, 2)
    arrays = tuple(_array(r) for r in records if r.type == 16)
    by_handle = {a.handle: a for a in arrays}
    dimms = tuple(_dimm(r, by_handle) for r in records if r.type == 17)
    _check_counts(arrays, dimms)
    return DmiReport(
        smbios_version=smbios[1] if smbios else None,
        bios=None
        if bios is None
        else BiosInfo(
            vendor=present(bios.fields.get("Vendor")),
            version=present(bios.fields.get("Version")),
            release_date=present(bios.fields.get("Release Date")),
        ),
        system=None if system is None else _system(system),
        baseboard=None
        if board is None
        else BaseboardInfo(
            manufacturer=present(board.fields.get("Manufacturer")),
            product_name=present(board.fields.get("Product Name")),
            version=present(board.fields.get("Version")),
            serial_number=present(board.fields.get("Serial Number")),
        ),
        processors=tuple(_processor(r) for r in records if r.type == 4),
        caches=tuple(_cache(r) for r in records if r.type == 7),
        memory_arrays=arrays,
        memory_devices=dimms,
    )
