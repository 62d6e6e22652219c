"""Redfish layer: one connector, typed read-only resources, vendor plugins, observe -> plan -> apply ops."""
