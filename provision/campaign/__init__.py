"""Firmware rollout campaigns: a baseline catalog, waves, health gates, halt and resume."""
