"""Pick the plugin for a BMC."""

from __future__ import annotations

from provision.errors import InputError
from provision.redfish.resources import ComputerSystem, ServiceRoot
from provision.redfish.vendors.ami import AmiPlugin
from provision.redfish.vendors.base import VendorPlugin
from provision.redfish.vendors.dell import DellPlugin
from provision.redfish.vendors.generic import GenericPlugin
from provision.redfish.vendors.supermicro import SupermicroPlugin

PLUGINS: tuple[type[VendorPlugin], ...] = (SupermicroPlugin, DellPlugin, AmiPlugin)


def detect(root: ServiceRoot, system: ComputerSystem | None) -> VendorPlugin:
    """The first plugin whose manufacturer or OEM key matches; the generic one otherwise."""
    for plugin in PLUGINS:
        if plugin.matches(root, system):
            return plugin()
    return GenericPlugin()


def by_name(name: str) -> VendorPlugin:
    candidates: tuple[type[VendorPlugin], ...] = (*PLUGINS, GenericPlugin)
    for plugin in candidates:
        if plugin.name == name:
            return plugin()
    raise InputError(f"unknown vendor plugin {name!r}")
