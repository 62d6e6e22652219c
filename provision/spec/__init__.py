"""The node spec and the inventory it lives in."""

from provision.spec.fleet import BmcEndpoint, Fleet, HostEntry, SshEndpoint
from provision.spec.loader import load_fleet
from provision.spec.model import NodeSpec

__all__ = ["BmcEndpoint", "Fleet", "HostEntry", "NodeSpec", "SshEndpoint", "load_fleet"]
