"""One network namespace and veth pair per twin: host side plvN 10.203.N.1/24, twin eth0 10.203.N.2/24.

Slots N are allocated under a host-wide lock so that several labs can run side by side; a twin's
slot is its index when free. Packets from a twin are never forwarded: twins reach the host only.
"""

from __future__ import annotations

import fcntl
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from provision.errors import LabError
from provision.lab.twins._cmd import ok, run

RUN_DIR = Path("/run/provision-lab")
MAX_SLOT = 250


def netns_name(slot: int) -> str:
    return f"pl-node{slot:02d}"


def host_if(slot: int) -> str:
    return f"plv{slot}"


@contextmanager
def allocation_lock() -> Iterator[None]:
    """Host-wide lock held while slots are chosen and their namespaces created."""
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    with open(RUN_DIR / "slots.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def used_slots() -> set[int]:
    """Slots taken by any lab on this host (a netns pl-nodeNN or a link plvN exists)."""
    used = {int(m.group(1)) for m in re.finditer(r"^pl-node(\d+)\b", run(["ip", "netns", "list"]), re.M)}
    links = run(["ip", "-o", "link", "show"])
    used |= {int(m.group(1)) for m in re.finditer(r"^\d+: plv(\d+)[@:]", links, re.M)}
    return used


def choose_slots(wanted: list[int], used: set[int]) -> list[int]:
    """Give each wanted index its own number when free, else the lowest free slot (pure)."""
    taken = set(used)
    chosen: list[int] = []
    for index in wanted:
        slot = index if index not in taken else next((s for s in range(1, MAX_SLOT + 1) if s not in taken), 0)
        if not slot:
            raise LabError(f"no free twin network slot (all {MAX_SLOT} in use)")
        taken.add(slot)
        chosen.append(slot)
    return chosen


def create(slot: int) -> None:
    """Create netns, veth pair, addresses and routes for `slot`."""
    ns, hif, peer = netns_name(slot), host_if(slot), f"plv{slot}c"
    run(["ip", "netns", "add", ns])
    run(["ip", "link", "add", hif, "type", "veth", "peer", "name", peer])
    run(["ip", "link", "set", peer, "netns", ns])
    run(["ip", "-n", ns, "link", "set", peer, "name", "eth0"])
    run(["ip", "-n", ns, "addr", "add", f"10.203.{slot}.2/24", "dev", "eth0"])
    run(["ip", "-n", ns, "link", "set", "lo", "up"])
    run(["ip", "-n", ns, "link", "set", "eth0", "up"])
    run(["ip", "-n", ns, "route", "add", "default", "via", f"10.203.{slot}.1"])
    run(["ip", "addr", "add", f"10.203.{slot}.1/24", "dev", hif])
    no_forwarding(hif)
    run(["ip", "link", "set", hif, "up"])


def no_forwarding(ifname: str) -> None:
    """Never route what a twin sends beyond the host, even where the host forwards between its NICs."""
    Path(f"/proc/sys/net/ipv4/conf/{ifname}/forwarding").write_text("0\n")


def delete(slot: int) -> None:
    """Remove the netns and veth of `slot`; absent parts are fine."""
    ns, hif = netns_name(slot), host_if(slot)
    ok(["ip", "link", "del", hif])
    ok(["ip", "netns", "del", ns])
    ok(["ip", "link", "del", f"plv{slot}c"])


def exists(slot: int) -> bool:
    return (Path("/run/netns") / netns_name(slot)).exists() or ok(["ip", "link", "show", host_if(slot)])
