#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `sanoid` (jimsalterjrs/sanoid 2.1, Debian package `sanoid`) for lab twins.

Reads /etc/sanoid/sanoid.conf as sanoid does (sections per dataset, `use_template`, `recursive`,
`autosnap`, `autoprune`, template_* sections with hourly/daily/weekly/monthly counts) and with
--take-snapshots / --prune-snapshots / --cron takes and prunes snapshots named as sanoid names them
(`<dataset>@autosnap_<YYYY-mm-dd_HH:MM:SS>_<period>`) in the twin's simulated ZFS state.
Simplified: a period's snapshot is due when none was taken since the period's last boundary (the hour,
midnight, Monday, the 1st); pruning keeps the newest N of each period. The real sanoid (Perl) is not run.
"""

from __future__ import annotations

import configparser
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate
import zfsstate

PERIODS = ("hourly", "daily", "weekly", "monthly")
_YES = ("yes", "1", "true", "on")


def _config(configdir: str) -> dict[str, dict[str, str]]:
    path = os.path.join(configdir, "sanoid.conf")
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#",))
    if not parser.read(path):
        labstate.die(f"FATAL: {path} does not exist or is unreadable", 1)
    raw = {s: dict(parser[s]) for s in parser.sections()}
    out: dict[str, dict[str, str]] = {}
    for section, values in raw.items():
        if section.startswith("template_"):
            continue
        merged: dict[str, str] = {"autosnap": "yes", "autoprune": "yes", "recursive": "no"}
        for template in [t.strip() for t in values.get("use_template", "").split(",") if t.strip()]:
            if f"template_{template}" not in raw:
                labstate.die(f"FATAL: template_{template} is used by {section} but not defined", 1)
            merged.update(raw[f"template_{template}"])
        merged.update(values)
        out[section] = merged
    return out


def _boundary(period: str, now: float) -> float:
    t = time.localtime(now)
    midnight = time.mktime((t.tm_year, t.tm_mon, t.tm_mday, 0, 0, 0, 0, 0, -1))
    if period == "hourly":
        return time.mktime((t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, 0, 0, 0, 0, -1))
    if period == "daily":
        return midnight
    if period == "weekly":
        return midnight - t.tm_wday * 86400
    return time.mktime((t.tm_year, t.tm_mon, 1, 0, 0, 0, 0, 0, -1))


def _targets(data: dict, dataset: str, recursive: bool) -> list[str]:
    if dataset not in data["datasets"]:
        labstate.die(f"could not find dataset {dataset} (is the pool imported?)", 1)
    return [d for d in sorted(data["datasets"]) if d == dataset or (recursive and d.startswith(dataset + "/"))]


def _mine(data: dict, dataset: str, period: str) -> list[tuple[int, str]]:
    suffix = f"_{period}"
    return sorted((int(v["created"]), k) for k, v in data["snapshots"].items()
                  if k.startswith(f"{dataset}@autosnap_") and k.endswith(suffix))


def take(data: dict, config: dict[str, dict[str, str]], verbose: bool) -> None:
    now = time.time()
    for dataset, conf in config.items():
        if conf.get("autosnap", "yes").lower() not in _YES:
            continue
        for name in _targets(data, dataset, conf.get("recursive", "no").lower() in _YES):
            for period in PERIODS:
                if int(conf.get(period, "0") or 0) <= 0:
                    continue
                taken = _mine(data, name, period)
                if taken and taken[-1][0] >= _boundary(period, now):
                    continue
                snap = f"{name}@autosnap_{time.strftime('%Y-%m-%d_%H:%M:%S', time.localtime(now))}_{period}"
                data["snapshots"][snap] = {"created": int(now)}
                if verbose:
                    print(f"taking snapshot {snap}")
    zfsstate.save(data)


def prune(data: dict, config: dict[str, dict[str, str]], verbose: bool) -> None:
    for dataset, conf in config.items():
        if conf.get("autoprune", "yes").lower() not in _YES:
            continue
        for name in _targets(data, dataset, conf.get("recursive", "no").lower() in _YES):
            for period in PERIODS:
                keep = int(conf.get(period, "0") or 0)
                taken = _mine(data, name, period)
                for _created, snap in taken[: max(0, len(taken) - keep)]:
                    del data["snapshots"][snap]
                    if verbose:
                        print(f"INFO: pruning snapshot {snap}")
    zfsstate.save(data)


def main(args: list[str]) -> int:
    configdir = "/etc/sanoid"
    if "--configdir" in args:
        configdir = args[args.index("--configdir") + 1]
    for a in args:
        if a.startswith("--configdir="):
            configdir = a.split("=", 1)[1]
    verbose = "--verbose" in args or "--debug" in args
    cron = "--cron" in args
    if not (cron or "--take-snapshots" in args or "--prune-snapshots" in args):
        labstate.die("usage: sanoid [--cron | --take-snapshots | --prune-snapshots] [--verbose] [--configdir DIR]"
                     "  (LAB STAND-IN)", 2)
    config = _config(configdir)
    data = zfsstate.load()
    if cron or "--take-snapshots" in args:
        take(data, config, verbose)
    if cron or "--prune-snapshots" in args:
        prune(data, config, verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
