"""Build the project's wheel the way a user would, from a copy of the tracked tree (never in the checkout:
an in-tree build leaves build/ and *.egg-info behind). Used by the packaging tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPY_SKIP = shutil.ignore_patterns(".git", ".venv", ".lab", ".lab-state", "build", "dist", "*.egg-info",
                                   "__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", ".ruff_cache",
                                   ".hypothesis", "reports", "logs", "bundles")


def tracked_files() -> list[str]:
    """The files a clean clone has (git's list; the tree walked when this is not a git checkout)."""
    proc = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    if proc.returncode == 0:
        return [line for line in proc.stdout.splitlines() if (ROOT / line).is_file()]
    return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]


def copy_tree(dest: Path) -> Path:
    """The tracked files of the checkout under `dest`; returns `dest`."""
    for name in tracked_files():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return dest


def build_wheel(work: Path) -> Path:
    """`python -m build --wheel` if `build` is installed, else `pip wheel --no-deps`; returns the .whl.

    Both build in an isolated environment with the build-system requirements of pyproject.toml,
    fetched from the package index (or pip's cache)."""
    source = copy_tree(work / "src")
    out = work / "dist"
    try:
        import build  # noqa: F401
        argv = [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(source)]
    except ImportError:
        argv = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"wheel build failed ({' '.join(argv[:4])}): {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    wheels = sorted(out.glob("provision-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]
