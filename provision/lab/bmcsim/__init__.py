"""The lab's Redfish BMC simulator: many BMCs in one asyncio process, seeded from real captures.

Modules: tree (seed store + copy-on-write views), fill/synth (complete server, services a capture
lacks), seed (shared per tree), auth (sessions), bios, update + tasks + images (firmware),
power (reset, boot override), vmedia, sel, faults, metadata, bmc (routing), http (aiohttp side),
server/__main__ (process entry), config (typed process config).
"""
