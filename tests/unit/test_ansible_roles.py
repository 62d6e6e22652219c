"""The roles' skeleton: every default documented in meta/argument_specs.yml, prefixes, FQCN; yamllint."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(p for p in (ROOT / "roles").iterdir() if (p / "tasks" / "main.yml").is_file())
ROLE_IDS = [p.name for p in ROLES]
EXPECTED = {"base", "boot_raid1", "zfs_scratch", "nvidia_driver", "cuda_toolkit", "cudnn", "nccl",
            "infiniband", "container_runtime", "monitoring", "apt_source", "apt_pin", "nfs_client"}


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _tasks(data: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for task in data or []:
        out.append(task)
        for key in ("block", "rescue", "always"):
            out += _tasks(task.get(key))
    return out


def test_every_role_is_there() -> None:
    assert set(ROLE_IDS) == EXPECTED


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_defaults_are_prefixed_and_documented(role: Path) -> None:
    defaults = _yaml(role / "defaults" / "main.yml") or {}
    spec = _yaml(role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert all(name.startswith(role.name + "_") for name in defaults), "defaults must carry the role prefix"
    assert set(defaults) <= set(spec), f"undocumented: {sorted(set(defaults) - set(spec))}"
    for name, option in spec.items():
        assert option.get("description"), f"{name}: no description"
        assert option.get("type"), f"{name}: no type"
        assert "default" in option or option.get("required"), f"{name}: neither default nor required"


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_tasks_are_named_sentences_with_fqcn_modules(role: Path) -> None:
    for path in [*sorted((role / "tasks").glob("*.yml")), role / "handlers" / "main.yml"]:
        if not path.exists():
            continue
        for task in _tasks(_yaml(path)):
            name = task.get("name", "")
            assert name and name[0].isupper(), f"{path.name}: task without a sentence name: {task}"
            modules = [k for k in task if "." in k and k.split(".")[0] == "ansible"]
            assert modules, f"{path.name}: {name}: no FQCN module"


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_main_only_includes_concerns(role: Path) -> None:
    for task in _yaml(role / "tasks" / "main.yml"):
        assert "ansible.builtin.import_tasks" in task or "ansible.builtin.include_tasks" in task, task["name"]


def test_probes_are_read_only_in_check_mode() -> None:
    """Every command that only reads (changed_when: false) must also run in check mode."""
    for path in sorted((ROOT / "roles").glob("*/tasks/*.yml")):
        for task in _tasks(_yaml(path)):
            if "ansible.builtin.command" in task and task.get("changed_when") is False:
                assert task.get("check_mode") is False, f"{path}: {task['name']}"


def test_yamllint_is_clean() -> None:
    yamllint = shutil.which("yamllint") or str(Path(ROOT / ".venv" / "bin" / "yamllint"))
    proc = subprocess.run([yamllint, "-s", "roles", "playbooks"], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_site_imports_every_concern_playbook() -> None:
    site = _yaml(ROOT / "playbooks" / "site.yml")
    imported = [entry["ansible.builtin.import_playbook"] for entry in site]
    assert imported[0] == "preflight.yml"
    others = {p.name for p in (ROOT / "playbooks").glob("*.yml")} - {"site.yml"}
    assert set(imported) == others
