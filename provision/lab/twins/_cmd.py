"""Run host commands for the twins; failures become one LabError line."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence

from provision.errors import LabError


def run(argv: Sequence[str], *, check: bool = True, timeout: float = 120, input_text: str | None = None) -> str:
    """Run `argv`; return stdout. Raise LabError naming the command and its last stderr line."""
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, input=input_text, check=False
        )
    except FileNotFoundError as exc:
        raise LabError(f"{argv[0]}: command not found") from exc
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"{' '.join(argv[:3])}: timed out after {timeout:.0f} s") from exc
    if check and proc.returncode != 0:
        raise LabError(f"{' '.join(argv[:4])} failed (exit {proc.returncode}): {last_line(proc.stderr)}")
    return proc.stdout


def ok(argv: Sequence[str], timeout: float = 60) -> bool:
    """True when `argv` exits 0 (output discarded)."""
    try:
        return subprocess.run(list(argv), capture_output=True, timeout=timeout, check=False).returncode == 0
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return False


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no error output"


def have(program: str) -> bool:
    return shutil.which(program) is not None
