"""Vendor plugins: every vendor difference lives here, nowhere else."""

from provision.redfish.vendors.base import GpuView, VendorPlugin
from provision.redfish.vendors.registry import PLUGINS, by_name, detect

__all__ = ["PLUGINS", "GpuView", "VendorPlugin", "by_name", "detect"]
