"""The personality engineer's side (provision.lab.twins.personality), called through one seam.

Every hook is optional: without a personality (absent, or PROVISION_LAB_PERSONALITY=off) the twins are
plain Debian nodes with an empty repository.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from provision.errors import InputError, LabError
from provision.spec import NodeSpec

MODULE = "provision.lab.twins.personality"
DEFAULT_IMAGE = "gpu"  # the factory image of a twin whose personality names none
SWITCH_ENV = "PROVISION_LAB_PERSONALITY"  # "off": plain Debian twins (infrastructure tests, benchmarks)


def personality() -> ModuleType | None:
    if os.environ.get(SWITCH_ENV, "").lower() in {"off", "0", "no", "false"}:
        return None
    try:
        return importlib.import_module(MODULE)
    except ModuleNotFoundError as exc:
        if exc.name and MODULE.startswith(exc.name):
            return None
        raise


def _hook(name: str) -> Any:
    mod = personality()
    return getattr(mod, name, None) if mod else None


def fault_kinds() -> frozenset[str]:
    kinds = _hook("FAULT_KINDS")
    return frozenset(kinds) if kinds else frozenset()


def prepare_node(state_dir: Path, spec: NodeSpec, index: int) -> None:
    hook = _hook("prepare_node")
    if hook:
        hook(state_dir, spec, index)


def proc_binds(state_dir: Path) -> dict[str, Path]:
    hook = _hook("proc_binds")
    return {str(k): Path(v) for k, v in hook(state_dir).items()} if hook else {}


def factory_image(spec: NodeSpec) -> str:
    """Which factory image a twin of `spec` comes from (twins of one image share a tools layer)."""
    hook = _hook("factory_image")
    return str(hook(spec)) if hook else DEFAULT_IMAGE


def install_tools(root: Path, image: str = DEFAULT_IMAGE) -> None:
    hook = _hook("install_tools")
    if hook:
        hook(root, image)


def build_repo(repo_dir: Path) -> bool:
    """Build the stand-in apt repository; False when there is no personality to build it."""
    hook = _hook("build_repo")
    if not hook:
        return False
    hook(repo_dir)
    return True


def apply_fault(state_dir: Path, kind: str, clear: bool) -> None:
    kinds = fault_kinds()
    if kind not in kinds:
        known = ", ".join(sorted(kinds)) or "none (no personality installed)"
        raise InputError(f"unknown fault kind {kind!r}; known: {known}")
    hook = _hook("apply_fault") or _hook("fault")
    if not hook:
        raise LabError("the twin personality provides no fault hook")
    hook(state_dir, kind, clear)
