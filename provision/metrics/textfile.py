"""The Prometheus text exposition format (0.0.4) and node_exporter's textfile-collector rules.

Format per the Prometheus documentation ("Exposition formats"): `# HELP name text` and `# TYPE name type`
before each family's samples, label values escaped (backslash, double quote, newline), HELP text escaped
(backslash, newline). The textfile collector reads only `*.prom` files, so the temporary file (same
directory, so the rename is atomic) is named `.NAME.XXXX.tmp` and never read half-written.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from provision.errors import InputError

_NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
# Metric files carry node names, check ids and digests, never a secret: readable by node_exporter's user.
FILE_MODE = 0o644


@dataclass(frozen=True)
class Sample:
    labels: Mapping[str, str]
    value: float


@dataclass
class Family:
    """One metric family: a name, its HELP text, its TYPE, and its samples."""

    name: str
    help: str
    type: Literal["gauge", "counter"] = "gauge"
    samples: list[Sample] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise ValueError(f"{self.name!r} is not a Prometheus metric name")
        if (self.type == "counter") != self.name.endswith("_total"):
            raise ValueError(f"{self.name}: only counters end in _total, and every counter does")

    def add(self, value: float, **labels: str) -> Family:
        bad = [k for k in labels if not _LABEL_RE.match(k) or k.startswith("__")]
        if bad:
            raise ValueError(f"{self.name}: {bad} are not Prometheus label names")
        self.samples.append(Sample(labels=dict(labels), value=value))
        return self


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def render(families: Iterable[Family]) -> str:
    """The families as exposition text; a family without samples is left out (no orphan HELP/TYPE)."""
    lines: list[str] = []
    seen: set[str] = set()
    for fam in families:
        if fam.name in seen:
            raise ValueError(f"metric family {fam.name} given twice")
        seen.add(fam.name)
        if not fam.samples:
            continue
        lines += [f"# HELP {fam.name} {_escape_help(fam.help)}", f"# TYPE {fam.name} {fam.type}"]
        for s in fam.samples:
            labels = ",".join(f'{k}="{_escape_label(str(v))}"' for k, v in sorted(s.labels.items()))
            lines.append(f"{fam.name}{{{labels}}} {_number(s.value)}" if labels else f"{fam.name} {_number(s.value)}")
    return "\n".join(lines) + "\n" if lines else ""


def write_textfile(path: Path, families: Iterable[Family]) -> Path:
    """Write the families to `path` atomically (temporary file in the same directory, fsync, rename), 0644."""
    text = render(families)
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"--prom {path}: directory {directory} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"--prom {path}: cannot write in {directory}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), FILE_MODE)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise InputError(f"--prom {path}: cannot write the metrics: {exc.strerror}") from None
    return path
