"""Prometheus metrics in node_exporter's textfile-collector format: verify runs and campaign state.

`provision verify --prom FILE` and `provision campaign status --prom FILE` write one file each, atomically
(a temporary file in the same directory, then a rename), for node_exporter's --collector.textfile.directory.
The series are listed in docs/metrics.md; docs/grafana/provision.json is a dashboard over them.
"""

from provision.metrics.textfile import Family, Sample, render, write_textfile

__all__ = ["Family", "Sample", "render", "write_textfile"]
