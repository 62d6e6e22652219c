"""Bring-up: staged, resumable, concurrent, from bare BMC to verified node."""
