"""The node spec and the inventory it lives in."""

from provision.spec.loader import load_fleet
from provision.spec.model import BmcEndpoint, Fleet, HostEntry, NodeSpec, SshEndpoint

__all__ = ["BmcEndpoint", "Fleet", "HostEntry", "NodeSpec", "SshEndpoint", "load_fleet"]
