"""The lab's firmware image format (also documented in firmware/README.md): a text header, then payload.

    PROVISION-LAB-FIRMWARE v1\\n
    component: bios\\n
    version: 2.1\\n
    \\n
    <payload bytes, optional>

`component` is matched against FirmwareInventory members by Id, then by Name, case-insensitively
(e.g. "BIOS", "BMC", "GPU1" on the Supermicro tree; "BIOS" on the Dell tree) unless the update
names its Targets. Anything without the header is rejected by the simulator as a corrupt image.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MAGIC = b"PROVISION-LAB-FIRMWARE v1\n"


class ImageHeader(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    component: str = Field(min_length=1)
    version: str = Field(min_length=1)


def build_image(component: str, version: str, payload_size: int = 4096) -> bytes:
    header = ImageHeader(component=component, version=version)
    text = f"component: {header.component}\nversion: {header.version}\n"
    return MAGIC + text.encode() + (b"\n" + bytes(payload_size) if payload_size else b"")


def make_image(path: Path, component: str, version: str, payload_size: int = 4096) -> Path:
    """Write an image for `component` at `version` to `path` (payload: `payload_size` zero bytes)."""
    path.write_bytes(build_image(component, version, payload_size))
    return path


def parse_image(data: bytes) -> ImageHeader:
    """The header of an image; ValueError when the bytes are not a lab image."""
    if not data.startswith(MAGIC):
        raise ValueError("not a provision lab firmware image (bad magic)")
    fields: dict[str, str] = {}
    for raw in data[len(MAGIC):].split(b"\n"):
        line = raw.decode("utf-8", errors="replace").strip()
        key, sep, value = line.partition(":")
        if not line or not sep:
            break
        fields[key.strip()] = value.strip()
    try:
        return ImageHeader.model_validate(fields)
    except ValidationError:
        raise ValueError(f"bad image header: needs component and version, got {sorted(fields)}") from None
