"""Where the project's Ansible content lives, and the environment a run needs."""

from __future__ import annotations

import os
import sys
from importlib import resources
from pathlib import Path

from provision.errors import InputError

PROJECT_ENV = "PROVISION_PROJECT_DIR"
PACKAGED = "_project"  # provision/_project/ in a wheel: ansible.cfg, roles/, playbooks/, inventory/, firmware/
CHECKOUT = Path(__file__).resolve().parents[2]


def project_dir() -> Path:
    """The directory holding ansible.cfg, playbooks/ and roles/: $PROVISION_PROJECT_DIR, else the checkout
    this package runs from, else the copy the wheel carries as package data."""
    return resolve_project(os.environ.get(PROJECT_ENV), CHECKOUT, packaged_dir())


def resolve_project(configured: str | None, checkout: Path, packaged: Path | None) -> Path:
    """The one decision of where the Ansible content is (pure; `project_dir` feeds it the real places).

    A set $PROVISION_PROJECT_DIR is taken or refused, never passed over; a checkout comes before the
    packaged copy so that a working tree always runs its own roles, edited or not."""
    if configured:
        root = Path(configured)
        if not _is_project(root):
            raise InputError(f"{PROJECT_ENV}={root}: no playbooks/ and roles/ there")
        return root
    if _is_project(checkout) and (checkout / "pyproject.toml").is_file():
        return checkout
    if packaged is not None and _is_project(packaged):
        return packaged
    raise InputError(f"{checkout}: no playbooks/ and roles/ here and none installed with the package "
                     f"(a wheel carries them in provision/{PACKAGED}); set {PROJECT_ENV} to a provision checkout")


def packaged_dir() -> Path | None:
    """provision/_project as installed from a wheel, if it is on the file system (not in a zip)."""
    content = resources.files("provision").joinpath(PACKAGED)
    return Path(str(content)) if isinstance(content, Path) else None


def example_inventory() -> Path:
    """The example inventory (hosts.yml) of the project in use: the checkout's or the packaged one."""
    return project_dir() / "inventory" / "hosts.yml"


def _is_project(root: Path) -> bool:
    return (root / "playbooks").is_dir() and (root / "roles").is_dir()


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
        "PATH": tools_path(Path(sys.executable), os.environ.get("PATH", os.defpath)),
    }


def tools_path(executable: Path, path: str) -> str:
    """PATH with the interpreter's bin directory first where its ansible-playbook is: a venv's `provision`
    run without activating the venv (pipx, cron, a systemd unit) runs that venv's Ansible, never another
    ansible-playbook found first on PATH (or none). The path is not resolved: a venv's python is a link."""
    bindir = executable.parent
    if not (bindir / "ansible-playbook").is_file():
        return path
    rest = [part for part in path.split(os.pathsep) if part and Path(part) != bindir]
    return os.pathsep.join([str(bindir), *rest])
