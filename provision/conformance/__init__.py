"""Conformance: read a node's real state and compare it with its spec.

`provision.conformance.parsers` turns tool output (nvidia-smi, ibstat, zpool, mdstat, nvme,
dmidecode, lscpu, dcgmi, fabric manager...) into typed, frozen models; the checks built on
them live beside it.
"""
