"""Reading the tool-output captures under tests/fixtures/ (never /work/shared)."""

from __future__ import annotations

import re
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

H100_590 = "nvidia-smi/nvidia_gpu_exporter/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
H100_MIG_590 = "nvidia-smi/nvidia_gpu_exporter/linux-x86_64__nvidia-h100-mig__590.48.01.txt"
H200_590 = "nvidia-smi/nvidia_gpu_exporter/linux-x86_64__nvidia-h200__590.48.01.txt"


def text(relpath: str) -> str:
    """The capture at tests/fixtures/<relpath>."""
    return (FIXTURES / relpath).read_text(encoding="utf-8")


def section(relpath: str, command: str, phase: str = "idle", *, exact: bool = False) -> str:
    """One command's output from a multi-command nvidia_gpu_exporter capture.

    Sections look like `# <phase> :: <title>` / `# $ <command>` / `####...`, then the output.
    `phase` is "capabilities", "idle" or "load"; `command` is matched as a prefix (or exactly).
    """
    body = text(relpath)
    pattern = re.compile(
        r"^# (?P<phase>\w+) :: [^\n]*\n# \$ (?P<cmd>[^\n]*)\n#+\n(?P<out>.*?)(?=\n#{20,}\n|\Z)", re.S | re.M
    )
    for match in pattern.finditer(body):
        cmd = match["cmd"].strip()
        if match["phase"] == phase and (cmd == command if exact else cmd.startswith(command)):
            return match["out"].strip("\n") + "\n"
    raise LookupError(f"no {phase} section for {command!r} in {relpath}")
