"""Plain DMTF behaviour (public mockups, unknown vendors)."""

from __future__ import annotations

from provision.redfish.vendors.base import VendorPlugin


class GenericPlugin(VendorPlugin):
    """Nothing vendor-specific: standard URIs, common attribute names."""

    name = "generic"
