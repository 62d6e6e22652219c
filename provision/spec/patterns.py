"""Host patterns: which nodes a command acts on. One meaning for every node argument and every --limit.

A pattern is evaluated by Ansible's own InventoryManager (`get_hosts`, its public API) over the
inventory the command loaded, so groups, `all`, `*`/`?`/`[..]` globs, `~regex`, `group[0]` and
`group[1:3]` subscripts, `,` and `:` separators, `!` exclusion and `&` intersection mean what they mean
to `ansible -l` (https://docs.ansible.com/ansible/latest/inventory_guide/intro_patterns.html),
including its ordering (plain terms first, then `&`, then `!`; hosts in match order, deduplicated).

Two readings are added where Ansible's own evaluation would select nothing (Ansible then ignores the
term with a warning):
- Slurm hostlist ranges, `node[01-08]`, `node[01-03,07]`, `rack[1-2]-n[1-4]` (scontrol show hostnames:
  the low bound's width is kept, so `node[01-10]` is node01..node10 and `node[8-10]` node8..node10).
  A bracket holding `-` or `,` is always a Slurm range (Ansible itself has removed `[x-y]` subscripts).
- Ansible's inventory host ranges, `node0[1:4]` or `node[01:08]`, when the part before the bracket is
  neither a host nor a group (when it is one, `[1:4]` stays Ansible's subscript of it).
Each name a range expands to is itself a pattern and must match.

Stricter than Ansible, on purpose: every term must match at least one host (a mistyped `!node3` would
otherwise exclude nothing), and the whole pattern must select at least one; otherwise one InputError
line naming the pattern (exit 2) before anything is done.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from provision.errors import InputError

MAX_EXPANSION = 100_000
_SLURM_BRACKET = re.compile(r"\[(\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)\]")
_ANY_BRACKET = re.compile(r"\[[^\]]*\]")
_ANSIBLE_RANGE = re.compile(r"\[[0-9A-Za-z]*:[0-9A-Za-z]+(?::[0-9]+)?\]")
_PLACEHOLDER = "\x00"
_MISMATCH = "Could not match supplied host pattern"

Patterns = str | Sequence[str]


def ansible_env() -> None:
    """Quiet Ansible's own messages for what this module reports itself (set before ansible is imported)."""
    os.environ.setdefault("ANSIBLE_HOST_PATTERN_MISMATCH", "ignore")
    os.environ.setdefault("ANSIBLE_LOCALHOST_WARNING", "False")
    os.environ.setdefault("ANSIBLE_INVENTORY_UNPARSED_WARNING", "False")


def slurm_expand(body: str) -> list[str] | None:
    """`node[01-03,07]` -> node01 node02 node03 node07 (scontrol show hostnames); None without a Slurm range.

    Several brackets expand as a product, the leftmost slowest (`r[1-2]n[1-2]`: r1n1 r1n2 r2n1 r2n2)."""
    if body.startswith("~") or not any("-" in m.group(1) or "," in m.group(1)
                                       for m in _SLURM_BRACKET.finditer(body)):
        return None
    parts: list[list[str]] = []
    pos = 0
    for m in _SLURM_BRACKET.finditer(body):
        parts.append([body[pos:m.start()]])
        parts.append(_slurm_range(body, m.group(1)))
        pos = m.end()
    parts.append([body[pos:]])
    total = 1
    for p in parts:
        total *= len(p)
    if total > MAX_EXPANSION:
        raise InputError(f"host pattern {body!r}: expands to {total} names (more than {MAX_EXPANSION})")
    return ["".join(combo) for combo in itertools.product(*parts)]


def _slurm_range(body: str, inner: str) -> list[str]:
    out: list[str] = []
    for item in inner.split(","):
        lo, _, hi = item.partition("-")
        hi = hi or lo
        if int(lo) > int(hi):
            raise InputError(f"host pattern {body!r}: range {item} runs backwards")
        if int(hi) - int(lo) >= MAX_EXPANSION:
            raise InputError(f"host pattern {body!r}: range {item} is larger than {MAX_EXPANSION}")
        out += [str(n).zfill(len(lo)) for n in range(int(lo), int(hi) + 1)]
    return out


def split_terms(pattern: str) -> list[str]:
    """Ansible's split_host_pattern, except that a comma inside a bracket (`node[01-03,07]`) separates nothing."""
    from ansible.inventory.manager import split_host_pattern

    protected = _ANY_BRACKET.sub(lambda m: m.group(0).replace(",", _PLACEHOLDER), pattern)
    return [t.replace(_PLACEHOLDER, ",") for t in split_host_pattern(protected)]


class HostPatterns:
    """Resolve host patterns over one Ansible InventoryManager; `where` prefixes every error line."""

    def __init__(self, manager: Any, where: str) -> None:
        self._manager = manager
        self._where = where
        self._names = [h.name for h in manager.get_hosts("all")]
        self._known = set(self._names)

    @classmethod
    def from_inventory(cls, inventory: Path, extra: Iterable[str] = ()) -> HostPatterns:
        """The inventory as Ansible reads it (no spec checks); `extra` names join it, in no group."""
        from provision.errors import InventoryError

        ansible_env()
        from ansible.errors import AnsibleError
        from ansible.inventory.manager import InventoryManager
        from ansible.parsing.dataloader import DataLoader

        if not inventory.exists():
            raise InventoryError(f"{inventory}: inventory path does not exist")
        try:
            manager = InventoryManager(loader=DataLoader(), sources=[str(inventory)])
        except AnsibleError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InventoryError(f"{inventory}: {first}") from None
        for name in extra:
            if name not in manager.hosts:
                manager.add_host(name, group="ungrouped")
        return cls(manager, str(inventory))

    @classmethod
    def from_groups(cls, hosts: Mapping[str, Sequence[str]], where: str) -> HostPatterns:
        """An in-memory inventory: host -> its groups (ancestors included), in inventory order."""
        ansible_env()
        from ansible.inventory.manager import InventoryManager
        from ansible.parsing.dataloader import DataLoader

        manager = InventoryManager(loader=DataLoader(), sources=[], parse=False)
        for name, groups in hosts.items():
            manager.add_host(name)
            for group in groups:
                manager.add_group(group)
                manager.add_host(name, group=group)
        manager.reconcile_inventory()
        return cls(manager, where)

    @property
    def names(self) -> list[str]:
        return list(self._names)

    def select(self, pattern: Patterns, limit: str | None = None) -> list[str]:
        """Host names `pattern` selects (each element of a list is a pattern too), narrowed by `limit`."""
        shown = pattern if isinstance(pattern, str) else ",".join(pattern)
        terms = self._terms(pattern)
        chosen = self._evaluate(f"host pattern {shown!r}", terms)
        if not chosen:
            raise InputError(f"{self._where}: host pattern {shown!r} matches no host")
        if limit is not None:
            allowed = set(self._evaluate(f"--limit {limit!r}", self._limit_terms(limit)))
            chosen = [n for n in chosen if n in allowed]
            if not chosen:
                raise InputError(f"{self._where}: --limit {limit!r} leaves no host of {shown!r}")
        return chosen

    def _terms(self, pattern: Patterns) -> list[str]:
        raw = [pattern] if isinstance(pattern, str) else list(pattern)
        terms = [t for p in raw for t in split_terms(p)]
        if not terms:
            raise InputError(f"{self._where}: empty host pattern {','.join(raw)!r}")
        return terms

    def _limit_terms(self, limit: str) -> list[str]:
        """--limit as ansible-playbook reads it: a pattern, where `@FILE` stands for the names in FILE."""
        terms: list[str] = []
        for term in self._terms(limit):
            if not term.startswith("@"):
                terms.append(term)
                continue
            path = Path(term[1:])
            if not path.is_file():
                raise InputError(f"--limit {term}: {path} is not a file")
            terms += [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not terms:
            raise InputError(f"--limit {limit!r}: names no host")
        return terms

    def _evaluate(self, label: str, terms: list[str]) -> list[str]:
        """Ansible's _evaluate_patterns: plain terms added, then `&` intersected, then `!` removed."""
        from ansible.inventory.manager import order_patterns

        hosts: list[str] = []
        for term in order_patterns(terms):
            op, body = (term[0], term[1:]) if term[0] in "!&" else ("", term)
            that = self._match(label, body)
            if op == "!":
                hosts = [h for h in hosts if h not in set(that)]
            elif op == "&":
                hosts = [h for h in hosts if h in set(that)]
            else:
                hosts += [h for h in that if h not in set(hosts)]
        return hosts

    def _match(self, label: str, body: str) -> list[str]:
        """One term's hosts; it must match at least one."""
        if not body:
            raise InputError(f"{self._where}: {label}: an empty term")
        try:
            pieces = slurm_expand(body)
        except InputError as exc:
            raise InputError(f"{self._where}: {exc}") from None
        if pieces is None:
            found = self._ansible(label, body)
            if found:
                return found
            pieces = self._ansible_range(label, body)
            if pieces is None:
                raise InputError(f"{self._where}: {label}: {body!r} matches no host{self._hint()}")
        found, missing = [], []
        for piece in pieces:
            hit = self._ansible(label, piece)
            if not hit:
                missing.append(piece)
            found += [h for h in hit if h not in found]
        if missing:
            more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
            raise InputError(f"{self._where}: {label}: {body!r} names {', '.join(missing[:5])}{more}, "
                             f"not in the inventory{self._hint()}")
        return found

    def _ansible(self, label: str, body: str) -> list[str]:
        """Ansible's own matching of one term (a plain term: its ! and & are handled by _evaluate)."""
        from ansible.errors import AnsibleError

        try:
            hosts = self._manager.get_hosts(body)
        except AnsibleError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if first.startswith(_MISMATCH):  # ANSIBLE_HOST_PATTERN_MISMATCH=error in the caller's environment
                return []
            raise InputError(f"{self._where}: {label}: {first}") from None
        return [h.name for h in hosts if h.name in self._known]  # never Ansible's implicit localhost

    def _ansible_range(self, label: str, body: str) -> list[str] | None:
        """`node0[1:4]` read as Ansible's inventory host range (node01..node04), or None when it is not one."""
        from ansible.errors import AnsibleError
        from ansible.plugins.inventory import expand_hostname_range

        if body.startswith("~") or not _ANSIBLE_RANGE.search(body):
            return None
        try:
            names: list[str] = expand_hostname_range(body)
        except AnsibleError as exc:
            raise InputError(f"{self._where}: {label}: {str(exc).strip()}") from None
        except (ValueError, IndexError):
            raise InputError(f"{self._where}: {label}: {body!r} is not a valid range") from None
        return names

    def _hint(self) -> str:
        shown = ", ".join(self._names[:8]) + (", ..." if len(self._names) > 8 else "")
        return f"; known: {shown or 'none'}"
