"""Every role's argument spec validates for every shipped profile, as site.yml runs it.

A role's meta/argument_specs.yml defaults are templated by ansible-core when the role starts; a default
that reads a spec key a profile leaves out (`provision_spec.containers.docker...` on a profile that runs
Docker from its default repository) fails the whole configure stage before any task. Only the validation
tasks run here (they are tagged `always`; the tag asked for matches nothing else), in check mode, on this
machine through the local connection: nothing on it is changed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _keys(value: object, prefix: str = "") -> frozenset[str]:
    """Every key path of a profile (list items under their list's path): what an argument spec can trip on."""
    if isinstance(value, dict):
        return frozenset({prefix} | {k for key, sub in value.items() for k in _keys(sub, f"{prefix}.{key}")})
    if isinstance(value, list):
        return frozenset({prefix} | {k for sub in value for k in _keys(sub, prefix)})
    return frozenset({prefix})


def _one_profile_per_shape() -> list[str]:
    """One profile for each set of key paths: profiles that differ only in values (the catalogue's rows) run the
    same argument-spec templating, so each shape runs once (each run takes seconds of CI time)."""
    shapes: dict[frozenset[str], str] = {}
    for path in sorted((ROOT / "inventory" / "group_vars" / "all").glob("profile_*.yml")):
        name = path.stem.removeprefix("profile_")
        shapes.setdefault(_keys(yaml.safe_load(path.read_text())[f"provision_profile_{name}"]), name)
    return sorted(shapes.values())


PROFILES = _one_profile_per_shape()
ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")


@pytest.mark.parametrize("profile", PROFILES)
def test_site_roles_argument_specs_validate(profile: str) -> None:
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(
        [str(ANSIBLE_PLAYBOOK), "-i", str(ROOT / "inventory" / "hosts.yml"), str(ROOT / "playbooks" / "site.yml"),
         "-c", "local", "--check", "--tags", "provision-argument-specs-only", "--limit", "node01",
         "-e", f"provision_profile={profile}"], stdin=subprocess.DEVNULL,
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    validated = re.findall(r"TASK \[(\w+) : Validating arguments", proc.stdout)
    assert validated, proc.stdout[-2000:]
    assert "base" in validated and "monitoring" in validated, validated


ROLES = sorted(p for p in (ROOT / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file())


@pytest.mark.parametrize("role", ROLES, ids=[p.name for p in ROLES])
def test_templated_defaults_are_the_roles_own(role: Path) -> None:
    """A default that reads the spec says in meta/argument_specs.yml exactly what defaults/main.yml says: two
    forms drift apart, and the argument spec's is the one templated first."""
    import yaml

    defaults_file = role / "defaults" / "main.yml"
    defaults = yaml.safe_load(defaults_file.read_text()) if defaults_file.is_file() else {}
    options = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    differ = {name: (opt["default"], defaults.get(name)) for name, opt in options.items()
              if isinstance(opt.get("default"), str) and "{{" in opt["default"] and name in defaults
              and str(defaults[name]).strip() != opt["default"].strip()}
    assert not differ, differ
