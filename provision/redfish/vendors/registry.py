"""Pick the plugin for a BMC."""

from __future__ import annotations

from provision.errors import InputError
from provision.redfish.resources import ComputerSystem, ServiceRoot
from provision.redfish.vendors.ami import AmiPlugin
from provision.redfish.vendors.base import VendorPlugin
from provision.redfish.vendors.dell import DellPlugin
from provision.redfish.vendors.generic import GenericPlugin
from provision.redfish.vendors.hpe import HpePlugin
from provision.redfish.vendors.lenovo import LenovoPlugin
from provision.redfish.vendors.nvidia_hgx import NvidiaHgxPlugin
from provision.redfish.vendors.supermicro import SupermicroPlugin

PLUGINS: tuple[type[VendorPlugin], ...] = (
    SupermicroPlugin, DellPlugin, HpePlugin, LenovoPlugin, AmiPlugin, NvidiaHgxPlugin)
"""Order matters: the BMC whose root we read decides. A Supermicro or AMI host BMC also lists the HGX
baseboard's HGX_FW_* entries and a DGX host may say Manufacturer NVIDIA, so the NVIDIA plugin comes last and
matches only a root that is NVIDIA's own (GH200 / HGX baseboard OpenBMC)."""


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
