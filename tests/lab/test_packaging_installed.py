"""The built wheel installed with pip in a fresh venv outside the checkout (dependencies from the package
index, no extras) runs `provision configure --plan` against a node twin with the roles and playbooks it
carries. The venv's `provision` is run by its path, the venv not activated and its bin/ not on PATH, as
pipx or a cron job runs it. Needs root (a twin) and the package index (or pip's cache): a few minutes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from provision.lab import twins
from provision.lab.inventory import write_twin_inventory
from provision.lab.twins.models import TwinRequest
from provision.lab.twins.state import twins_dir
from provision.spec import load_fleet
from tests.wheel_build import ROOT, build_wheel

PROFILE = "ml_prod_v4"

pytestmark = [
    pytest.mark.lab,
    pytest.mark.twins,
    pytest.mark.heavy,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("systemd-nspawn"), reason="node twins need root"),
]


@dataclass
class Installed:
    venv: Path
    home: Path  # the working directory of every command: outside the checkout, no inventory/ there

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.venv / "bin" / "provision"), *args], cwd=self.home, env=_clean_env(),
                              capture_output=True, text=True, timeout=timeout, check=False)

    def python(self, code: str) -> str:
        proc = subprocess.run([str(self.venv / "bin" / "python"), "-c", code], cwd=self.home, env=_clean_env(),
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()


def _clean_env() -> dict[str, str]:
    """No trace of the checkout or the shared venv: not on PATH, PYTHONPATH, or as the project dir."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "PROVISION_PROJECT_DIR", "PYTHONHOME"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    shared_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", os.defpath).split(os.pathsep) if p != shared_bin)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("installed")
    assert not base.is_relative_to(ROOT)
    wheel = build_wheel(base / "build")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
                         cwd=base, env=_clean_env(), capture_output=True, text=True, timeout=1200, check=False)
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    home = base / "elsewhere"
    home.mkdir()
    return Installed(venv, home)


@dataclass
class Twin:
    node: str
    inventory: Path


@pytest.fixture(scope="module")
def twin(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    lab_dir = tmp_path_factory.mktemp("pkg-lab")
    fleet = load_fleet(ROOT / "inventory" / "hosts.yml")
    try:
        infos = twins.up(lab_dir, [TwinRequest(name="node01", index=1, profile=PROFILE)],
                         lambda profile: fleet.profiles[profile])
        inventory = write_twin_inventory(lab_dir / "inventory", PROFILE, ROOT / "inventory" / "group_vars", infos,
                                         twins_dir(lab_dir))
        yield Twin("node01", inventory)
    finally:
        twins.down(lab_dir)


def test_the_installed_package_is_the_wheel_not_the_checkout(installed: Installed) -> None:
    where = installed.python("import provision; print(provision.__file__)")
    assert Path(where).is_relative_to(installed.venv) and not Path(where).is_relative_to(ROOT)
    root = installed.python("from provision.ansible.project import project_dir; print(project_dir())")
    assert Path(root).is_relative_to(installed.venv) and Path(root).name == "_project"


def test_no_extra_means_no_lab_dependencies_and_nothing_broken(installed: Installed) -> None:
    assert installed.python("import importlib.util as u; print(u.find_spec('aiohttp') is None)") == "True"
    check = subprocess.run([str(installed.venv / "bin" / "python"), "-m", "pip", "check"], cwd=installed.home,
                           env=_clean_env(), capture_output=True, text=True, timeout=120, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


def test_help_answers(installed: Installed) -> None:
    proc = installed.run("--help", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "configure" in proc.stdout and "verify" in proc.stdout


def test_configure_plan_runs_the_packaged_roles_on_a_twin(installed: Installed, twin: Twin) -> None:
    proc = installed.run("configure", "--plan", twin.node, "-i", str(twin.inventory), "--json")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    import json

    result = json.loads(proc.stdout)
    assert result["check"] is True and result["status"] == "successful"
    stats = result["hosts"][twin.node]
    assert stats["failed"] == 0 and stats["unreachable"] == 0 and stats["ok"] > 0
    # a factory-fresh twin: the roles would change things (the scratch pool, the sysctls), and say so
    tasks = {change["task"] for change in result["changes"]}
    assert {"Report the scratch pool that would be created", "Write the sysctls"} <= tasks


def test_lab_up_without_the_lab_extra_names_the_extra(installed: Installed) -> None:
    proc = installed.run("lab", "up", "--bmc-only", "--lab-dir", str(installed.home / "lab"), timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "pip install 'provision[lab]'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (installed.home / "lab").exists()
