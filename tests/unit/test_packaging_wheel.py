"""The built wheel: what it carries (the Ansible content, py.typed, every package file; no tests, no caches),
its metadata as pyproject.toml declares it, and, unpacked outside the checkout, its roles and playbooks
found and accepted by ansible-playbook. The build fetches the build backend from the package index (or
pip's cache): about 20 s."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from tests.wheel_build import ROOT, build_wheel, tracked_files

CONTENT_DIRS = ("roles/", "playbooks/", "inventory/", "firmware/")
PACKAGED = "provision/_project/"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


@pytest.fixture(scope="module")
def unpacked(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    return site


def test_the_wheel_carries_the_ansible_content_byte_for_byte(wheel: Path, names: set[str]) -> None:
    content = [f for f in tracked_files() if f.startswith(CONTENT_DIRS) or f == "ansible.cfg"]
    assert "playbooks/site.yml" in content and "inventory/hosts.yml" in content  # the list is the real tree
    missing = sorted(f for f in content if PACKAGED + f not in names)
    assert missing == []
    with zipfile.ZipFile(wheel) as zf:
        changed = sorted(f for f in content if zf.read(PACKAGED + f) != (ROOT / f).read_bytes())
    assert changed == []


def test_every_role_has_its_tasks_in_the_wheel(names: set[str]) -> None:
    roles = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks" / "main.yml").is_file())
    assert len(roles) >= 10
    assert [r for r in roles if f"{PACKAGED}roles/{r}/tasks/main.yml" not in names] == []
    assert {f"{PACKAGED}playbooks/site.yml", f"{PACKAGED}inventory/hosts.yml", f"{PACKAGED}ansible.cfg"} <= names


def test_every_package_file_is_in_the_wheel(names: set[str]) -> None:
    """A data file type the package-data globs miss (a new tree, a template) would be absent at run time."""
    package = [f for f in tracked_files() if f.startswith("provision/")]
    assert "provision/py.typed" in package
    assert sorted(f for f in package if f not in names) == []


def test_the_wheel_holds_no_tests_caches_or_checkout_files(names: set[str]) -> None:
    assert sorted(n for n in names if n.startswith(("tests/", "bench/", "scripts/", "docs/"))) == []
    assert sorted(n for n in names if "__pycache__" in n or n.endswith(".pyc")) == []
    tops = {n.split("/")[0] for n in names}
    assert tops == {"provision", "provision-0.1.0.dist-info"}


def test_the_metadata_is_what_pyproject_declares(wheel: Path) -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    with zipfile.ZipFile(wheel) as zf:
        meta = Parser().parsestr(zf.read("provision-0.1.0.dist-info/METADATA").decode())
        entry_points = zf.read("provision-0.1.0.dist-info/entry_points.txt").decode()
    core = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert len(core) == len(declared["dependencies"])
    assert {"certifi", "typer", "urllib3", "paramiko"} <= {r.split("<")[0].split(">")[0] for r in core}
    assert not [r for r in core if r.startswith("aiohttp")]
    assert set(meta.get_all("Provides-Extra") or []) == set(declared["optional-dependencies"])
    assert "provision = provision.cli:run" in entry_points


def _outside_env(site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PROVISION_PROJECT_DIR", "PYTHONPATH")}
    return env | {"PYTHONPATH": str(site)}


def test_unpacked_outside_the_checkout_it_runs_its_own_content(unpacked: Path, tmp_path: Path) -> None:
    script = ("import provision; from provision.ansible.project import project_dir, example_inventory; "
              "print(provision.__file__); print(project_dir()); print(example_inventory())")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=_outside_env(unpacked),
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    module, root, inventory = proc.stdout.split()
    assert Path(module).is_relative_to(unpacked)
    assert Path(root) == unpacked / "provision" / "_project"
    assert Path(inventory) == unpacked / "provision" / "_project" / "inventory" / "hosts.yml"


def test_ansible_accepts_the_packaged_playbooks_and_roles(unpacked: Path, tmp_path: Path) -> None:
    """--syntax-check resolves every role of site.yml through the packaged ansible.cfg and roles path."""
    from provision.ansible.project import base_env

    root = unpacked / "provision" / "_project"
    env = _outside_env(unpacked) | base_env(root, None) | {"ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}
    playbook = Path(sys.executable).with_name("ansible-playbook")
    proc = subprocess.run([str(playbook), "--syntax-check", "-i", str(root / "inventory" / "hosts.yml"),
                           str(root / "playbooks" / "site.yml")], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert env["ANSIBLE_ROLES_PATH"] == str(root / "roles")
