"""Scheduler integration: drain a node that fails verify, resume it when it passes (Slurm's scontrol).

`settings` (the inventory's `provision_slurm`), `slurm` (scontrol's node view, the pure drain/resume
plan, and applying it), `local` (`provision verify --local`: the node-side gather run on the node itself),
`specfile` (the node's spec as `provision spec export` writes it, for nodes without the inventory).
"""
