"""Where the project's Ansible content lives, and the environment a run needs."""

from __future__ import annotations

import os
from pathlib import Path

from provision.errors import InputError

PROJECT_ENV = "PROVISION_PROJECT_DIR"


def project_dir() -> Path:
    """The directory holding ansible.cfg, playbooks/ and roles/ ($PROVISION_PROJECT_DIR or the checkout)."""
    configured = os.environ.get(PROJECT_ENV)
    root = Path(configured) if configured else Path(__file__).resolve().parents[2]
    if not (root / "playbooks").is_dir() or not (root / "roles").is_dir():
        raise InputError(f"{root}: no playbooks/ and roles/ here; set {PROJECT_ENV} to the provision checkout")
    return root


def playbook_path(root: Path, playbook: str) -> Path:
    """The playbook file under playbooks/ ("site", "site.yml" or "playbooks/site.yml")."""
    name = Path(playbook).name
    if not name.endswith((".yml", ".yaml")):
        name += ".yml"
    path = root / "playbooks" / name
    if not path.is_file():
        known = sorted(p.stem for p in (root / "playbooks").glob("*.yml"))
        raise InputError(f"playbook {playbook!r} not found in {root / 'playbooks'}; known: {', '.join(known)}")
    return path


def strategy_env(strategy: str) -> dict[str, str]:
    """Environment selecting Ansible's execution strategy; mitogen needs the optional `fast` extra."""
    if strategy == "linear":
        return {"ANSIBLE_STRATEGY": "linear"}
    try:
        import ansible_mitogen
    except ImportError:
        raise InputError(
            "--strategy mitogen needs the optional mitogen package: pip install 'provision[fast]'"
        ) from None
    plugins = Path(ansible_mitogen.__file__).parent / "plugins" / "strategy"
    return {"ANSIBLE_STRATEGY_PLUGINS": str(plugins), "ANSIBLE_STRATEGY": "mitogen_linear"}


def base_env(root: Path, config: Path | None) -> dict[str, str]:
    """Environment of every run: the project's config and roles, plain output."""
    return {
        "ANSIBLE_CONFIG": str(config or root / "ansible.cfg"),
        "ANSIBLE_ROLES_PATH": str(root / "roles"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        # ansible-runner sets this to False unless given: ssh would get StrictHostKeyChecking=no first.
        "ANSIBLE_HOST_KEY_CHECKING": "True",
    }
