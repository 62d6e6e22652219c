"""`lsblk -J [-b] [-o COLUMNS]`: the block device tree.

Which keys appear depends on `-o`; all but `name` are optional. Sizes are bytes with `-b`
(integers) or human strings without it. Strings are stripped (lsblk pads model/serial).
"""

from __future__ import annotations

from provision.conformance.parsers._base import Model, fail, tool_parser
from provision.conformance.parsers._json import JsonObject, load_object, opt_str, req_list, req_str

TOOL = "lsblk -J"
_MAX_DEPTH = 16


class BlockDevice(Model):
    """One device (disk, partition, md array, ...) and its children."""

    name: str
    kname: str | None = None
    type: str | None = None
    size: int | str | None = None
    model: str | None = None
    serial: str | None = None
    rev: str | None = None
    tran: str | None = None
    mountpoints: tuple[str, ...] = ()
    children: tuple[BlockDevice, ...] = ()

    def walk(self) -> tuple[BlockDevice, ...]:
        """This device and all its descendants, depth first."""
        return (self, *(d for child in self.children for d in child.walk()))


def _size(obj: JsonObject, what: str) -> int | str | None:
    value = obj.get("size")
    if value is None or isinstance(value, str):
        return value.strip() if isinstance(value, str) else None
    if isinstance(value, bool) or not isinstance(value, int):
        fail(TOOL, f"{what}: 'size' should be bytes or text, got {value!r:.60}")
    return value


def _mountpoints(obj: JsonObject, what: str) -> tuple[str, ...]:
    many = obj.get("mountpoints")
    if isinstance(many, list):
        return tuple(m.strip() for m in many if isinstance(m, str))
    one = opt_str(TOOL, obj, "mountpoint", what)
    return (one,) if one else ()


def _device(obj: JsonObject, depth: int) -> BlockDevice:
    if depth > _MAX_DEPTH:
        fail(TOOL, f"device tree deeper than {_MAX_DEPTH} levels")
    name = req_str(TOOL, obj, "name", "block device")
    what = f"device {name}"
    children = req_list(TOOL, obj, "children", what) if "children" in obj else []
    return BlockDevice(
        name=name,
        kname=opt_str(TOOL, obj, "kname", what),
        type=opt_str(TOOL, obj, "type", what),
        size=_size(obj, what),
        model=opt_str(TOOL, obj, "model", what),
        serial=opt_str(TOOL, obj, "serial", what),
        rev=opt_str(TOOL, obj, "rev", what),
        tran=opt_str(TOOL, obj, "tran", what),
        mountpoints=_mountpoints(obj, what),
        children=tuple(_device(child, depth + 1) for child in children),
    )


@tool_parser(TOOL)
def parse_lsblk(text: str) -> tuple[BlockDevice, ...]:
    """Parse `lsblk -J`."""
    devices = req_list(TOOL, load_object(TOOL, text), "blockdevices", "top level")
    return tuple(_device(d, 0) for d in devices)
