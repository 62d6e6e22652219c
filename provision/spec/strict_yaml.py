"""Strict YAML reading for inventory files: precise errors, no silent duplicate keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from provision.errors import InventoryError


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys and tolerates Ansible's !vault/!unsafe tags."""


_Fast: type[Any] = getattr(yaml, "CSafeLoader", _StrictLoader)


class _FastStrictLoader(_Fast):
    """The same over libyaml's parser (a 1,000-host inventory reads ~4x faster); a file it refuses is read again
    by _StrictLoader, whose messages name the problem the same way on every machine."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


def _construct_tagged_scalar(loader: _StrictLoader, node: yaml.Node) -> str:
    if isinstance(node, yaml.ScalarNode):
        return str(loader.construct_scalar(node))
    raise yaml.constructor.ConstructorError(None, None, "expected a scalar", node.start_mark)


for _loader in (_StrictLoader, _FastStrictLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _loader.add_constructor("!vault", _construct_tagged_scalar)
    _loader.add_constructor("!unsafe", _construct_tagged_scalar)


def load_strict(path: Path, *, allow_empty: bool = False) -> Any:
    """Parse one YAML file; raise InventoryError naming file, line and problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InventoryError(f"{path}: cannot read: {exc}") from None
    if text.startswith("$ANSIBLE_VAULT"):
        return None  # a whole-file vault; Ansible decrypts it
    try:
        try:
            data = yaml.load(text, Loader=_FastStrictLoader)
        except yaml.YAMLError:
            data = yaml.load(text, Loader=_StrictLoader)  # the message as the pure-Python parser words it
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise InventoryError(f"{path}: {where}YAML error: {problem}") from None
    except yaml.YAMLError as exc:
        raise InventoryError(f"{path}: YAML error: {' '.join(str(exc).split())}") from None  # one line
    if data is None and not allow_empty:
        raise InventoryError(f"{path}: file is empty")
    return data


def yaml_files(root: Path) -> list[Path]:
    """Every YAML file under an inventory directory (or the file itself)."""
    if root.is_file():
        return [root] if root.suffix in {".yml", ".yaml"} else []
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in {".yml", ".yaml"})


def vars_files(name: Path) -> list[Path]:
    """The YAML files of one host_vars/group_vars entry `name` (no suffix), as Ansible reads them: NAME.yml,
    NAME.yaml, then every YAML file under the directory NAME/."""
    files = [p for p in (name.with_suffix(".yml"), name.with_suffix(".yaml")) if p.is_file()]
    return files + (yaml_files(name) if name.is_dir() else [])
