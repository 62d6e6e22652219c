"""The roles and playbooks as the Ansible collection provision.node: `ansible-galaxy collection build`
from a copy of the tracked tree, installed with `ansible-galaxy collection install`, then found by
their fully qualified names with no roles path, and the roles' includes of each other resolved inside
the collection."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

from tests.wheel_build import ROOT, copy_tree, tracked_files

pytestmark = pytest.mark.heavy  # ansible-galaxy and a few ansible-playbook runs: about a minute

GALAXY = Path(sys.executable).with_name("ansible-galaxy")
PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")
COLLECTION_TOP = {"MANIFEST.json", "FILES.json", "README.md", "LICENSE", "CHANGELOG.md", "meta", "playbooks", "roles"}


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("collection")
    source = copy_tree(work / "src")
    proc = _run([str(GALAXY), "collection", "build", "--output-path", str(work / "out"), str(source)], work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (found,) = (work / "out").glob("provision-node-*.tar.gz")
    return found


@pytest.fixture(scope="module")
def installed(tarball: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The collections path the collection was installed into."""
    path = tmp_path_factory.mktemp("collections")
    proc = _run([str(GALAXY), "collection", "install", "-p", str(path), str(tarball)], path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return path


def _members(tarball: Path) -> set[str]:
    with tarfile.open(tarball) as tar:
        return {m.name.removeprefix("./") for m in tar.getmembers() if m.isfile()}


def _env(collections: Path, work: Path) -> dict[str, str]:
    """Only the installed collection: no roles path, an empty config, nothing from the checkout."""
    (work / "none.cfg").touch()
    return {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")} | {
        "ANSIBLE_COLLECTIONS_PATH": str(collections), "ANSIBLE_ROLES_PATH": str(work / "no-roles"),
        "ANSIBLE_CONFIG": str(work / "none.cfg"), "ANSIBLE_LOCAL_TEMP": str(work / "tmp"), "ANSIBLE_NOCOLOR": "1"}


def test_the_collection_holds_the_roles_and_playbooks_only(tarball: Path) -> None:
    members = _members(tarball)
    assert {m.split("/")[0] for m in members} == COLLECTION_TOP
    content = [f for f in tracked_files() if f.startswith(("roles/", "playbooks/"))]
    assert "roles/base/tasks/main.yml" in content
    assert sorted(f for f in content if f not in members) == []


def test_the_collection_version_is_the_package_version(tarball: Path) -> None:
    with tarfile.open(tarball) as tar:
        handle = tar.extractfile("MANIFEST.json")
        assert handle is not None
        info = json.load(handle)["collection_info"]
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert (info["namespace"], info["name"], info["version"]) == ("provision", "node", version)
    assert tarball.name == f"provision-node-{version}.tar.gz"


def test_the_site_playbook_runs_by_its_fqcn_with_no_roles_path(installed: Path, tmp_path: Path) -> None:
    proc = _run([str(PLAYBOOK), "--syntax-check", "-i", str(ROOT / "inventory" / "hosts.yml"), "provision.node.site"],
                tmp_path, _env(installed, tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ansible_collections/provision/node/playbooks/site.yml" in proc.stdout


def _included_roles() -> list[str]:
    names = set()
    for path in (ROOT / "roles").glob("*/tasks/*.yml"):
        names |= set(re.findall(r"include_role:\s*\n\s+name:\s*(\S+)", path.read_text(encoding="utf-8")))
    return sorted(names)


@pytest.mark.parametrize(("role", "exists"), [*((r, True) for r in _included_roles()), ("no_such_role", False)])
def test_a_role_s_include_of_a_sibling_resolves_inside_the_collection(installed: Path, tmp_path: Path,
                                                                      role: str, exists: bool) -> None:
    """include_role is dynamic (syntax-check never loads it): a probe role in the installed collection
    includes the sibling by its short name with a task file that does not exist. Found, Ansible says the
    file is missing; not found, it says the role is (the last case, a name no role has, shows that)."""
    probe = installed / "ansible_collections" / "provision" / "node" / "roles" / f"zz_probe_{role}" / "tasks"
    probe.mkdir(parents=True)
    (probe / "main.yml").write_text(f"---\n- name: Include a sibling\n  ansible.builtin.include_role:\n"
                                    f"    name: {role}\n    tasks_from: no_such_file\n")
    play = tmp_path / "probe.yml"
    play.write_text(f"- hosts: localhost\n  connection: local\n  gather_facts: false\n"
                    f"  roles: [provision.node.zz_probe_{role}]\n")
    proc = _run([str(PLAYBOOK), "-i", "localhost,", str(play)], tmp_path, _env(installed, tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert ("Could not find specified file in role: tasks/no_such_file" in out) is exists, out[-2000:]
    assert (f"the role '{role}' was not found" in out) is not exists, out[-2000:]
