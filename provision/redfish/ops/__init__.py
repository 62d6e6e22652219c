"""Redfish operations, each as observe (read-only) -> plan (pure) -> apply."""
