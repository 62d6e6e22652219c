"""The lab's firmware image format: a two-line header naming component and version, then payload.

    PROVISION-FW-IMAGE 1\\n
    {"component": "BIOS", "version": "1.6"}\\n
    <payload bytes>

`component` is matched against FirmwareInventory members by Id, then by Name (e.g. "BIOS",
"BMC", "GPU1" on the Supermicro tree; "BIOS" or "Integrated Dell Remote Access Controller" on the
Dell tree). Anything else is rejected by the simulator as a corrupt image (the task fails).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

MAGIC = b"PROVISION-FW-IMAGE 1\n"


class ImageHeader(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    component: str
    version: str


def build_image(component: str, version: str, payload_size: int = 4096) -> bytes:
    header = ImageHeader(component=component, version=version)
    return MAGIC + header.model_dump_json().encode() + b"\n" + bytes(payload_size)


def make_image(path: Path, component: str, version: str, payload_size: int = 4096) -> Path:
    """Write an image for `component` at `version` to `path` (payload: `payload_size` zero bytes)."""
    path.write_bytes(build_image(component, version, payload_size))
    return path


def parse_image(data: bytes) -> ImageHeader:
    """The header of an image; ValueError when the bytes are not a lab image."""
    if not data.startswith(MAGIC):
        raise ValueError("not a provision lab firmware image (bad magic)")
    line = data[len(MAGIC):].split(b"\n", 1)[0]
    try:
        return ImageHeader.model_validate(json.loads(line))
    except (ValueError, ValidationError) as exc:
        raise ValueError(f"bad image header: {exc.__class__.__name__}") from None
