"""What a verify needs to know of a node: an inventory host, or (verify --local) a node judging itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from provision.conformance.facts import Runner
from provision.spec.fleet import BmcEndpoint, LabDeclaration, SshEndpoint
from provision.spec.model import NodeSpec


class Target(Protocol):
    """A node to verify: its name, profile and spec, the inventory's lab declaration, its SSH endpoint and its BMC
    (each None when the node is checked in place, or the inventory names none)."""

    @property
    def name(self) -> str: ...

    @property
    def profile(self) -> str: ...

    @property
    def spec(self) -> NodeSpec: ...

    @property
    def lab(self) -> LabDeclaration: ...

    @property
    def ssh(self) -> SshEndpoint | None: ...

    @property
    def bmc(self) -> BmcEndpoint | None: ...


RunnerFor = Callable[[Target], Runner]
"""How a verify runs a script on a node (the system ssh in production, `sh -s` here for --local)."""
