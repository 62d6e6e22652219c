"""The sdist carries what the wheel is made of (MANIFEST.in): `python -m build` (sdist, then the wheel built
from the unpacked sdist, as a package index's users get it) gives the same wheel as a build from the tree.
`build` is installed into a venv of the test's own, never into the project's."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.wheel_build import build_wheel, copy_tree

pytestmark = pytest.mark.heavy  # a venv, `build` from the package index and two builds: a minute or two


def _names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return {n for n in zf.namelist() if not n.endswith("dist-info/RECORD")}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(sdist, wheel built from that sdist)."""
    work = tmp_path_factory.mktemp("sdist")
    venv = work / "tools"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "build"],
                         capture_output=True, text=True, timeout=600, check=False)
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
    source = copy_tree(work / "src")
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "build", "--outdir", str(work / "out"), str(source)],
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (sdist,) = (work / "out").glob("provision-*.tar.gz")
    (wheel,) = (work / "out").glob("provision-*.whl")
    return sdist, wheel


def test_the_wheel_from_the_sdist_is_the_wheel_from_the_tree(built: tuple[Path, Path],
                                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    _, from_sdist = built
    from_tree = build_wheel(tmp_path_factory.mktemp("tree"))
    assert "provision/_project/playbooks/site.yml" in _names(from_sdist)
    assert _names(from_sdist) ^ _names(from_tree) == set()


def test_the_sdist_has_the_content_and_no_checkout_litter(built: tuple[Path, Path]) -> None:
    sdist, _ = built
    with tarfile.open(sdist) as tar:
        names = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name and m.isfile()}
    assert {"setup.py", "MANIFEST.in", "ansible.cfg", "CHANGELOG.md", "roles/base/tasks/main.yml",
            "playbooks/site.yml", "inventory/hosts.yml", "provision/py.typed"} <= names
    assert sorted(n for n in names if n.startswith((".git/", ".venv/")) or "__pycache__" in n) == []
