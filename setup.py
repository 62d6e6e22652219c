"""The wheel carries the project's Ansible content as package data (everything else is in pyproject.toml).

roles/, playbooks/, ansible.cfg and the example inventory (with the firmware images it names) live at
the top of the checkout, where Ansible and the operator expect them. A wheel build copies them into
provision/_project/, where provision.ansible.project.project_dir() finds them when no checkout is
around. An editable install copies nothing: it runs the checkout's own tree.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CONTENT = ("ansible.cfg", "roles", "playbooks", "inventory", "firmware")
TARGET = Path("provision") / "_project"
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")


class BuildWithContent(build_py):
    """build_py, then the Ansible content copied under provision/_project/ in the build tree."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        root = Path(__file__).resolve().parent
        target = Path(self.build_lib) / TARGET
        for name in CONTENT:
            source = root / name
            if not source.exists():
                raise SystemExit(f"setup.py: {source} missing; the wheel must carry it")
            if source.is_dir():
                shutil.copytree(source, target / name, ignore=SKIP, dirs_exist_ok=True)
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / name)


setup(cmdclass={"build_py": BuildWithContent})
