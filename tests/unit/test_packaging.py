"""Packaging without building: where the Ansible content is found, dependencies declared as imported,
the lab's dependencies only in the `lab` extra, bounds, py.typed and the changelog."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from provision.ansible import project
from provision.ansible.project import PROJECT_ENV, project_dir, resolve_project
from provision.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# Imports that come from an extra, and the only places they may be imported.
OPTIONAL_IMPORTS = {
    "aiohttp": ("lab", "provision/lab/bmcsim/"),  # the simulator runs as its own process
    "ansible_mitogen": ("fast", "provision/ansible/project.py"),  # strategy_env, inside a function
    "psycopg": ("postgres", "provision/journal/"),  # a PostgreSQL journal only, imported when one is opened
}


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return _normal(match.group(0))


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(extra: str | None = None) -> set[str]:
    project_table = PYPROJECT["project"]
    specs = project_table["dependencies"] if extra is None else project_table["optional-dependencies"][extra]
    return {_name(s) for s in specs}


def _imports() -> dict[str, set[str]]:
    """Top-level third-party module -> files of provision/ importing it (data/ holds scripts run inside
    twins, not modules of the package)."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "provision").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if "/data/" in rel:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "provision":
                    found.setdefault(top, set()).add(rel)
    return found


def _distributions(module: str) -> set[str]:
    return {_normal(d) for d in metadata.packages_distributions().get(module, [])}


# --- where the roles and playbooks are -------------------------------------------------------
def _content(root: Path, pyproject: bool = False) -> Path:
    (root / "roles").mkdir(parents=True)
    (root / "playbooks").mkdir()
    if pyproject:
        (root / "pyproject.toml").write_text("[project]\nname = 'provision'\n")
    return root


def test_a_checkout_runs_its_own_tree(tmp_path: Path) -> None:
    checkout = _content(tmp_path / "checkout", pyproject=True)
    packaged = _content(tmp_path / "site" / "provision" / "_project")
    assert resolve_project(None, checkout, packaged) == checkout


def test_installed_without_checkout_uses_the_packaged_copy(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    site.mkdir()
    packaged = _content(site / "provision" / "_project")
    assert resolve_project(None, site, packaged) == packaged


def test_a_stray_roles_dir_in_site_packages_is_no_checkout(tmp_path: Path) -> None:
    """Some wheel installing roles/ and playbooks/ at the top of site-packages must not win."""
    site = _content(tmp_path / "site-packages")
    packaged = _content(site / "provision" / "_project")
    assert resolve_project(None, site, packaged) == packaged


def test_the_environment_wins_over_checkout_and_package(tmp_path: Path) -> None:
    chosen = _content(tmp_path / "mine")
    checkout = _content(tmp_path / "checkout", pyproject=True)
    assert resolve_project(str(chosen), checkout, _content(tmp_path / "pkg")) == chosen


def test_a_wrong_environment_value_is_refused_not_passed_over(tmp_path: Path) -> None:
    checkout = _content(tmp_path / "checkout", pyproject=True)
    with pytest.raises(InputError, match=rf"{PROJECT_ENV}={tmp_path / 'nowhere'}: no playbooks/ and roles/"):
        resolve_project(str(tmp_path / "nowhere"), checkout, None)


def test_nothing_anywhere_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    half = tmp_path / "pkg"
    (half / "roles").mkdir(parents=True)  # no playbooks/: not content
    with pytest.raises(InputError) as caught:
        resolve_project(None, tmp_path, half)
    message = str(caught.value)
    assert "\n" not in message and PROJECT_ENV in message and "provision/_project" in message


def test_this_checkout_resolves_to_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PROJECT_ENV, raising=False)
    assert project_dir() == ROOT
    assert project.example_inventory() == ROOT / "inventory" / "hosts.yml"


def test_the_lab_copies_specs_from_the_project_inventory_when_cwd_has_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.lab import manager

    monkeypatch.delenv(PROJECT_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert manager._source_inventory(Path("inventory/hosts.yml")) == ROOT / "inventory" / "hosts.yml"
    monkeypatch.setattr(project, "CHECKOUT", tmp_path)  # neither a checkout nor a package copy
    monkeypatch.setattr(project, "packaged_dir", lambda: None)
    with pytest.raises(InputError, match=r"inventory/hosts\.yml: inventory not found"):
        manager._source_inventory(Path("inventory/hosts.yml"))


# --- dependencies ----------------------------------------------------------------------------
def test_every_imported_module_comes_from_a_declared_dependency() -> None:
    core = _declared()
    undeclared = {}
    for module, files in _imports().items():
        if module in OPTIONAL_IMPORTS:
            continue
        dists = _distributions(module)
        assert dists, f"{module} (imported by {sorted(files)}) is not installed here"
        if not dists & core:
            undeclared[module] = sorted(files)
    assert undeclared == {}


def test_optional_imports_stay_where_their_extra_is_needed() -> None:
    imports = _imports()
    for module, (extra, where) in OPTIONAL_IMPORTS.items():
        assert _distributions(module) & _declared(extra), f"{module}: not in the {extra} extra"
        assert not _distributions(module) & _declared(), f"{module}: lab/fast-only but always installed"
        outside = sorted(f for f in imports.get(module, ()) if not f.startswith(where))
        assert outside == [], f"{module} imported outside {where}"


def test_every_dependency_is_imported() -> None:
    imported = set().union(*(_distributions(m) for m in _imports()))
    assert _declared() - imported == set()


def test_the_test_extra_brings_the_lab() -> None:
    assert "provision[lab]" in PYPROJECT["project"]["optional-dependencies"]["test"]


@pytest.mark.parametrize("name", ["urllib3", "typer", "pydantic", "ansible-core", "rich"])
def test_fast_moving_dependencies_are_bounded_above(name: str) -> None:
    spec = next(s for s in PYPROJECT["project"]["dependencies"] if _name(s) == name)
    assert re.search(r"<\s*\d", spec), spec


@pytest.mark.parametrize("name", sorted(_declared()))
def test_installed_versions_satisfy_the_declared_bounds(name: str) -> None:
    """The versions the tests run with are inside the declared range (the bounds say what was verified)."""
    from packaging.requirements import Requirement

    spec = next(s for s in PYPROJECT["project"]["dependencies"] if _name(s) == name)
    requirement = Requirement(spec)
    assert requirement.specifier.contains(metadata.version(requirement.name), prereleases=True), spec


def test_the_cli_starts_without_the_lab_extra() -> None:
    """`pip install provision` (no extras): every command loads and answers --help without aiohttp."""
    script = ("import sys; sys.modules['aiohttp'] = None; sys.modules['ansible_mitogen'] = None\n"
              "from provision.cli import main\n"
              "codes = [main(['--help']), main(['configure', '--help']), main(['lab', 'up', '--help'])]\n"
              "sys.exit(max(codes))")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "configure" in proc.stdout


# --- typing marker and changelog --------------------------------------------------------------
def test_the_package_is_marked_typed() -> None:
    assert (ROOT / "provision" / "py.typed").is_file()


def test_the_changelog_keeps_a_changelog() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog")
    assert "keepachangelog.com" in text and "semver.org" in text
    versions = re.findall(r"^## \[([^\]]+)\]", text, flags=re.M)
    assert versions[0] == "Unreleased" and PYPROJECT["project"]["version"] in versions
    sections = set(re.findall(r"^### (\w+)", text, flags=re.M))
    assert sections and sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


# --- which ansible-playbook runs -------------------------------------------------------------
def _bin(tmp_path: Path, with_ansible: bool) -> Path:
    bindir = tmp_path / "venv" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "python").touch()
    if with_ansible:
        (bindir / "ansible-playbook").touch()
    return bindir / "python"


def test_the_interpreter_s_ansible_comes_first_on_path(tmp_path: Path) -> None:
    python = _bin(tmp_path, with_ansible=True)
    assert project.tools_path(python, "/usr/local/bin:/usr/bin") == f"{python.parent}:/usr/local/bin:/usr/bin"


def test_the_interpreter_s_bin_is_moved_first_not_repeated(tmp_path: Path) -> None:
    python = _bin(tmp_path, with_ansible=True)
    assert project.tools_path(python, f"/usr/bin:{python.parent}:/bin") == f"{python.parent}:/usr/bin:/bin"


def test_path_is_left_alone_without_ansible_beside_the_interpreter(tmp_path: Path) -> None:
    python = _bin(tmp_path, with_ansible=False)
    assert project.tools_path(python, "/usr/bin:/bin") == "/usr/bin:/bin"


def test_every_run_gets_that_path(tmp_path: Path) -> None:
    env = project.base_env(tmp_path, None)
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)  # this venv has ansible-playbook


def test_lab_up_without_the_lab_extra_says_which_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from provision.lab import manager

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "aiohttp" else real(name, *a))
    with pytest.raises(InputError, match=r"needs the lab extra: pip install 'provision\[lab\]'"):
        manager.up(manager.UpOptions(lab_dir=tmp_path / "lab", bmc_only=True))
    assert not (tmp_path / "lab").exists()  # refused before anything was made
