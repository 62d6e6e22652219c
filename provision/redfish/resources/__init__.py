"""Typed, read-only views of Redfish resources (pydantic, frozen, unknown keys ignored)."""

from provision.redfish.resources.base import Resource, Status
from provision.redfish.resources.bios import AttributeRegistry, Bios, RegistryAttribute
from provision.redfish.resources.firmware import SoftwareInventory, UpdateService
from provision.redfish.resources.log import LogEntry
from provision.redfish.resources.memory import Memory, MemoryLocation
from provision.redfish.resources.network import NetworkAdapter, NetworkPort
from provision.redfish.resources.pcie import PCIeDevice
from provision.redfish.resources.power import (
    Fan,
    Power,
    PowerControl,
    PowerSupply,
    Redundancy,
    Temperature,
    Thermal,
    power_from_subsystem,
    thermal_from_subsystem,
)
from provision.redfish.resources.processor import Processor
from provision.redfish.resources.storage import Drive, SimpleStorage, Storage, Volume
from provision.redfish.resources.system import Boot, ComputerSystem, ServiceRoot
from provision.redfish.resources.task import Task

__all__ = [
    "AttributeRegistry", "Bios", "Boot", "ComputerSystem", "Drive", "Fan", "LogEntry", "Memory", "MemoryLocation",
    "NetworkAdapter", "NetworkPort", "PCIeDevice", "Power", "PowerControl", "PowerSupply", "Processor", "Redundancy",
    "RegistryAttribute", "Resource", "ServiceRoot", "SimpleStorage", "SoftwareInventory", "Status", "Storage",
    "Task", "Temperature", "Thermal", "UpdateService", "Volume", "power_from_subsystem", "thermal_from_subsystem",
]
