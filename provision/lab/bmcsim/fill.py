"""Present the complete spec'd server: fill members a pruned capture lacks by cloning siblings.

The vendor tree gives shape, names and quirks; the spec's `Parts` give the counts and part
details. Every filled URI is reported so the simulator can say what it invented.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from provision.lab.bmcsim.config import Parts
from provision.lab.bmcsim.synth import first_member
from provision.lab.bmcsim.tree import ROOT, Json

_DIGITS = re.compile(r"^(\D*?)(\d+)(.*)$")
_OK = {"State": "Enabled", "Health": "OK"}


def complete(res: dict[str, Json], parts: Parts) -> list[str]:
    """Fill `res` in place; returns the URIs it added. Members beyond the spec's counts (a one-socket profile
    served from a two-socket capture, no GPU, two drives) are removed with every link to them."""
    added = fill_listed(res)
    for system in _members(res, f"{ROOT}/Systems"):
        added += _memory(res, system, parts)
        added += _cpus(res, system, parts)
    added += _gpus(res, parts)
    added += _drives(res, parts.boot_drives + parts.scratch_drives)
    _drive_sizes(res, parts)
    _no_simple_storage_devices(res)
    _network(res, parts)
    added += _psus(res, parts)
    return added


def _members(res: dict[str, Json], coll: str) -> list[str]:
    return [str(m["@odata.id"]).rstrip("/") for m in (res.get(coll) or {}).get("Members", [])
            if isinstance(m, dict) and "@odata.id" in m]


def _rewrite(node: Any, old: str, new: str) -> Any:
    if isinstance(node, dict):
        return {k: _rewrite(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite(v, old, new) for v in node]
    if isinstance(node, str) and (node == old or node.startswith((old + "/", old + "#"))):
        return new + node[len(old):]
    return node


def clone(res: dict[str, Json], src: str, dst: str) -> list[str]:
    """Copy `src` and its sub-resources to `dst`, with ids, names and serials changed."""
    old_id, new_id = src.rsplit("/", 1)[1], dst.rsplit("/", 1)[1]
    added: list[str] = []
    for uri in [u for u in res if u == src or u.startswith(src + "/")]:
        target = dst + uri[len(src):]
        if target in res:
            continue
        obj = _rewrite(copy.deepcopy(res[uri]), src, dst)
        if uri == src:
            _rename(obj, old_id, new_id)
        res[target] = obj
        added.append(target)
    return added


def _rename(obj: Json, old_id: str, new_id: str) -> None:
    obj["Id"] = new_id
    for key in ("Name", "DeviceLocator", "Description"):
        if isinstance(obj.get(key), str) and old_id in obj[key]:
            obj[key] = obj[key].replace(old_id, new_id)
    if isinstance(obj.get("SerialNumber"), str):
        obj["SerialNumber"] = f"{obj['SerialNumber']}-{new_id}"
    obj.pop("@odata.etag", None)


def next_id(existing: list[str], template: str) -> str:
    """A fresh id shaped like `template` (its first number bumped past every sibling's)."""
    m = _DIGITS.match(template)
    if not m:
        n = 2
        while f"{template}-{n}" in existing:
            n += 1
        return f"{template}-{n}"
    prefix, _, suffix = m.groups()
    nums = [int(x.group(2)) for x in map(_DIGITS.match, existing)
            if x and x.group(1) == prefix and x.group(3) == suffix]
    return f"{prefix}{max(nums, default=0) + 1}{suffix}"


def _link_lists(res: dict[str, Json]) -> list[tuple[str, str, list[Any]]]:
    """Every (owner, key, list) of member links: collection Members and Storage Drives arrays."""
    out = []
    for uri, obj in res.items():
        for key in ("Members", "Drives"):
            links = obj.get(key)
            if isinstance(links, list) and links and all(isinstance(x, dict) for x in links):
                out.append((uri, key, links))
    return out


# collections whose members are not interchangeable parts: never cloned from a sibling
NOT_CLONED = ("#MessageRegistryFileCollection.", "#TaskCollection.", "#SessionCollection.",
              "#JsonSchemaFileCollection.", "#EventDestinationCollection.", "#ManagerAccountCollection.",
              "#RoleCollection.", "#CertificateCollection.")


def fill_listed(res: dict[str, Json]) -> list[str]:
    """Members a collection lists but the capture lacks: clone a present sibling into each."""
    added: list[str] = []
    for owner, _key, links in _link_lists(res):
        if str(res[owner].get("@odata.type", "")).startswith(NOT_CLONED):
            continue
        uris = [str(x.get("@odata.id", "")).rstrip("/") for x in links]
        present = [u for u in uris if u in res]
        for uri in uris:
            if uri and uri not in res and present and uri.rsplit("/", 1)[0] == present[0].rsplit("/", 1)[0]:
                added += clone(res, present[0], uri)
    for uri in [u for u in added if "/" in u]:
        _ensure_in_collection(res, uri)
    return added


def _ensure_in_collection(res: dict[str, Json], uri: str) -> None:
    parent = res.get(uri.rsplit("/", 1)[0])
    if parent is None or not isinstance(parent.get("Members"), list):
        return
    listed = any(m.get("@odata.id", "").rstrip("/") == uri for m in parent["Members"])
    same_kind = str(res[uri].get("@odata.type", "")).split(".")[0] in str(parent.get("@odata.type", ""))
    if not listed and same_kind:
        parent["Members"].append({"@odata.id": uri})
        parent["Members@odata.count"] = len(parent["Members"])


def _top_up(res: dict[str, Json], coll: str, have: list[str], want: int) -> list[str]:
    """Clone the last of `have` into `coll` until there are `want`."""
    added: list[str] = []
    if not have or coll not in res:
        return added
    while len(have) < want:
        ids = [m.rsplit("/", 1)[1] for m in _members(res, coll)]
        dst = f"{coll}/{next_id(ids, have[-1].rsplit('/', 1)[1])}"
        added += clone(res, have[-1], dst)
        res[coll]["Members"].append({"@odata.id": dst})
        res[coll]["Members@odata.count"] = len(res[coll]["Members"])
        have.append(dst)
    return added


def _memory(res: dict[str, Json], system: str, parts: Parts) -> list[str]:
    coll = str(res.get(system, {}).get("Memory", {}).get("@odata.id", "")).rstrip("/")
    dimms = [m for m in _members(res, coll) if m in res]
    dimms = _trim(res, dimms, parts.dimms)
    added = _top_up(res, coll, dimms, parts.dimms)
    _place_clones(res, *_located(res, dimms), parts)
    for uri in dimms:
        res[uri].update(CapacityMiB=parts.dimm_mib, MemoryDeviceType=parts.dimm_type, Status=dict(_OK))
    summary = res[system].setdefault("MemorySummary", {})
    summary["TotalSystemMemoryGiB"] = parts.dimms * parts.dimm_mib // 1024
    return added


def _located(res: dict[str, Json], dimms: list[str]) -> tuple[list[str], list[str]]:
    """(DIMMs that hold their MemoryLocation first, clones that repeat one): fill_listed and _top_up copy a
    captured DIMM whole, its MemoryLocation with it."""
    seen: set[tuple[object, ...]] = set()
    first: list[str] = []
    repeats: list[str] = []
    for uri in sorted(dimms, key=_natural):
        loc = res[uri].get("MemoryLocation")
        key = tuple(loc.get(k) for k in ("Socket", "MemoryController", "Channel", "Slot")) if isinstance(loc, dict) \
            else None
        if key is None or key not in seen:
            first.append(uri)
            if key is not None:
                seen.add(key)
        else:
            repeats.append(uri)
    return first, repeats


def _place_clones(res: dict[str, Json], captured: list[str], clones: list[str], parts: Parts) -> None:
    """Each cloned DIMM gets a MemoryLocation of its own: the positions of the spec's layout (sockets x
    channels x DIMMs per channel, numbered from the capture's own first socket, channel and slot) that no
    captured DIMM holds, in order; the memory controller of a captured DIMM on the same channel, if any."""
    locs = [loc for u in captured if isinstance(loc := res[u].get("MemoryLocation"), dict)]

    def base(key: str) -> int:
        return min((v for loc in locs if isinstance(v := loc.get(key), int)), default=0)

    used = {(loc.get("Socket"), loc.get("Channel"), loc.get("Slot")) for loc in locs}
    controllers = {(loc.get("Socket"), loc.get("Channel")): loc.get("MemoryController") for loc in locs}
    free = [(base("Socket") + s, base("Channel") + c, base("Slot") + d) for s in range(parts.cpus)
            for c in range(parts.channels_per_socket) for d in range(parts.dimms_per_channel)]
    free = [pos for pos in free if pos not in used]
    extra = max((v for loc in locs if isinstance(v := loc.get("Slot"), int)), default=0)
    for uri in clones:
        if free:
            socket, channel, slot = free.pop(0)
        else:  # more DIMMs than the layout has places (a spec `spec validate` flags): a slot number of its own
            extra += 1
            socket, channel, slot = base("Socket"), base("Channel"), extra
        place: Json = {"Socket": socket, "Channel": channel, "Slot": slot}
        if controllers.get((socket, channel)) is not None:
            place["MemoryController"] = controllers[(socket, channel)]
        res[uri]["MemoryLocation"] = place
        res[uri]["DeviceLocator"] = f"Socket {socket} Channel {channel} Slot {slot}"


def _is_cpu(obj: Json) -> bool:
    return obj.get("ProcessorType", "CPU") == "CPU"


def _cpus(res: dict[str, Json], system: str, parts: Parts) -> list[str]:
    coll = str(res.get(system, {}).get("Processors", {}).get("@odata.id", "")).rstrip("/")
    cpus = [m for m in _members(res, coll) if m in res and _is_cpu(res[m])]
    cpus = _trim(res, cpus, parts.cpus)
    added = _top_up(res, coll, cpus, parts.cpus)
    for uri in cpus:
        res[uri].update(Model=parts.cpu_model, TotalCores=parts.cpu_cores, Status=dict(_OK))
    summary = res[system].setdefault("ProcessorSummary", {})
    summary.update(Count=parts.cpus, Model=parts.cpu_model)
    return added


def _is_gpu(uri: str, obj: Json) -> bool:
    kind = str(obj.get("@odata.type", ""))
    if kind.startswith("#Processor."):
        return obj.get("ProcessorType") == "GPU" and "NVIDIA" in str(obj.get("Manufacturer", "")).upper()
    if kind.startswith("#PCIeDevice."):
        return uri.rsplit("/", 1)[1].upper().startswith("GPU") or "H100" in str(obj.get("Model", ""))
    return False


def _gpus(res: dict[str, Json], parts: Parts) -> list[str]:
    gpus = sorted((u for u, o in res.items() if _is_gpu(u, o)), key=_natural)
    gpus = _trim(res, gpus, parts.gpus)
    if gpus:
        added = _top_up(res, gpus[-1].rsplit("/", 1)[0], gpus, parts.gpus)
        for uri in gpus:
            res[uri].update(Model=parts.gpu_model, Status=dict(_OK))
        return added
    system = first_member(res, f"{ROOT}/Systems")
    coll = str(res.get(system or "", {}).get("Processors", {}).get("@odata.id", "")).rstrip("/")
    cpus = [m for m in _members(res, coll) if m in res]
    if not cpus or parts.gpus == 0:
        return []
    first = f"{coll}/GPU1"
    added = clone(res, cpus[0], first)
    res[first].update(ProcessorType="GPU", Model=parts.gpu_model, Manufacturer="NVIDIA Corporation")
    res[coll]["Members"].append({"@odata.id": first})
    res[coll]["Members@odata.count"] = len(res[coll]["Members"])
    return added + _top_up(res, coll, [first], parts.gpus)


def _trim(res: dict[str, Json], have: list[str], want: int) -> list[str]:
    """Drop the members of `have` past the first `want` (and what lies under them, and every link to them);
    returns the ones kept."""
    for uri in have[want:]:
        for sub in [u for u in res if u == uri or u.startswith(uri + "/")]:
            del res[sub]
        gone = {"@odata.id": uri}
        for obj in res.values():
            _unlink(obj, gone)
    return have[:want]


def _unlink(node: Any, gone: dict[str, str]) -> None:
    """Remove `gone` from every list of links in `node`, keeping each `X@odata.count` beside it right."""
    if isinstance(node, dict):
        for key, value in list(node.items()):
            if isinstance(value, list) and gone in value:
                node[key] = [v for v in value if v != gone]
                if f"{key}@odata.count" in node:
                    node[f"{key}@odata.count"] = len(node[key])
            _unlink(node[key], gone)
    elif isinstance(node, list):
        for item in node:
            _unlink(item, gone)


def _natural(uri: str) -> tuple[str, int]:
    m = _DIGITS.match(uri.rsplit("/", 1)[1])
    return (uri, 0) if not m else (uri.rsplit("/", 1)[0] + m.group(1), int(m.group(2)))


def _drives(res: dict[str, Json], want: int) -> list[str]:
    drives = sorted((u for u, o in res.items() if str(o.get("@odata.type", "")).startswith("#Drive.")),
                    key=_natural)
    if not drives:
        return _new_storage(res, want)
    if len(drives) >= want:
        _trim(res, drives, want)
        return []
    added: list[str] = []
    storages = [(u, o) for u, o in res.items() if isinstance(o.get("Drives"), list)
                and any(str(d.get("@odata.id", "")).rstrip("/") == drives[-1] for d in o["Drives"])]
    parent = drives[-1].rsplit("/", 1)[0]
    while len(drives) < want:
        siblings = [u.rsplit("/", 1)[1] for u in res if u.rsplit("/", 1)[0] == parent]
        dst = f"{parent}/{next_id(siblings, drives[-1].rsplit('/', 1)[1])}"
        added += clone(res, drives[-1], dst)
        for _uri, storage in storages:
            storage["Drives"].append({"@odata.id": dst})
            storage["Drives@odata.count"] = len(storage["Drives"])
        _ensure_in_collection(res, dst)
        drives.append(dst)
    return added


def _no_simple_storage_devices(res: dict[str, Json]) -> None:
    """The spec's drives are the Storage drives filled above: a captured SimpleStorage's devices (another
    server's SATA bays) are not the spec's and would be counted beside them, so none are listed."""
    for obj in res.values():
        if str(obj.get("@odata.type", "")).startswith("#SimpleStorage.") and obj.get("Devices"):
            obj["Devices"] = []


def _psus(res: dict[str, Json], parts: Parts) -> list[str]:
    """The spec's PSUs populated; bays beyond them shown empty (State Absent), as a real chassis does."""
    want = parts.psus
    for uri, obj in res.items():
        supplies = obj.get("PowerSupplies")
        if str(obj.get("@odata.type", "")).startswith("#Power.") and isinstance(supplies, list) and supplies:
            while len(supplies) < want:
                new = copy.deepcopy(supplies[-1])
                new["MemberId"] = str(len(supplies))
                new["@odata.id"] = f"{uri}#/PowerSupplies/{len(supplies)}"
                supplies.append(new)
            for i, psu in enumerate(supplies):
                _populate(psu, i < want, parts.psu_watts, i)
    added: list[str] = []
    for uri, obj in list(res.items()):
        if str(obj.get("@odata.type", "")).startswith("#PowerSupplyCollection."):
            have = [m for m in _members(res, uri) if m in res]
            added += _top_up(res, uri, have, want)
            for i, member in enumerate(_members(res, uri)):
                if member in res:
                    _populate(res[member], i < want, parts.psu_watts, i)
    return added


def _populate(psu: Json, present: bool, watts: int, bay: int) -> None:
    """Bay `bay`'s PSU: its serial is the bay's in Power and PowerSubsystem alike (the same PSU listed twice,
    as a real BMC lists it), never the serial of the PSU a clone was copied from."""
    if "SerialNumber" in psu or present:
        psu["SerialNumber"] = f"LABPSU{bay:03d}"
    if present:
        psu["Status"] = {"State": "Enabled", "Health": "OK"}
        psu["PowerCapacityWatts"] = watts
        return
    psu["Status"] = {"State": "Absent"}
    for key in ("PowerInputWatts", "PowerOutputWatts", "LastPowerOutputWatts", "LineInputVoltage"):
        if key in psu:
            psu[key] = None


def _new_storage(res: dict[str, Json], want: int) -> list[str]:
    """A tree with no Drive at all (e.g. only SimpleStorage): one NVMe Storage with `want` drives."""
    system = next(iter(_members(res, f"{ROOT}/Systems")), None)
    if system is None or system not in res or want == 0:
        return []
    coll = str(res[system].get("Storage", {}).get("@odata.id", f"{system}/Storage")).rstrip("/")
    added: list[str] = []
    if coll not in res:
        res[coll] = {"@odata.id": coll, "@odata.type": "#StorageCollection.StorageCollection",
                     "Name": "Storage Collection", "Members": [], "Members@odata.count": 0}
        res[system]["Storage"] = {"@odata.id": coll}
        added.append(coll)
    storage = f"{coll}/NVMe"
    drives = [f"{storage}/Drives/Disk{i}" for i in range(want)]
    res[storage] = {"@odata.id": storage, "@odata.type": "#Storage.v1_9_0.Storage", "Id": "NVMe",
                    "Name": "NVMe Storage", "Status": dict(_OK),
                    "Drives": [{"@odata.id": d} for d in drives], "Drives@odata.count": want}
    res[coll]["Members"].append({"@odata.id": storage})
    res[coll]["Members@odata.count"] = len(res[coll]["Members"])
    for i, uri in enumerate(drives):
        res[uri] = {"@odata.id": uri, "@odata.type": "#Drive.v1_11_1.Drive", "Id": f"Disk{i}",
                    "Name": f"NVMe drive {i}", "Status": dict(_OK), "Protocol": "NVMe", "MediaType": "SSD"}
    return [*added, storage, *drives]


def _drive_sizes(res: dict[str, Json], parts: Parts) -> None:
    """The first drives are the spec's boot pair, the rest its scratch set (sizes from the spec)."""
    drives = sorted((u for u, o in res.items() if str(o.get("@odata.type", "")).startswith("#Drive.")),
                    key=_natural)
    for i, uri in enumerate(drives):
        tb = parts.boot_drive_tb if i < parts.boot_drives else parts.scratch_drive_tb
        res[uri].update(CapacityBytes=int(tb * 1e12), Protocol=parts.drive_protocol, MediaType="SSD")


def _network(res: dict[str, Json], parts: Parts) -> None:
    """The spec's Ethernet ports, then its InfiniBand ports, one adapter each; other adapters unlisted."""
    want = parts.eth_ports + parts.ib_ports
    for coll in [u for u, o in res.items() if str(o.get("@odata.type", "")).startswith(
            "#NetworkAdapterCollection.") and "/Chassis/" in u]:
        adapters = [m for m in _members(res, coll) if m in res]
        if not adapters:
            continue
        adapters = adapters[:want]
        res[coll]["Members"] = [{"@odata.id": a} for a in adapters]
        res[coll]["Members@odata.count"] = len(adapters)
        for i, adapter in enumerate(adapters):
            ib = i >= parts.eth_ports
            _ports(res, adapter, "InfiniBand" if ib else "Ethernet",
                   parts.ib_rate_gbps if ib else parts.eth_speed_gbps)
        return


def _ports(res: dict[str, Json], adapter: str, tech: str, gbps: int) -> None:
    """The adapter's one port (the spec counts ports: a captured dual-port card lists only its first)."""
    for key in ("Ports", "NetworkPorts"):
        coll = str((res[adapter].get(key) or {}).get("@odata.id", "")).rstrip("/")
        ports = [m for m in _members(res, coll) if m in res][:1]
        if ports:
            res[coll]["Members"] = [{"@odata.id": p} for p in ports]
            res[coll]["Members@odata.count"] = len(ports)
        for port in ports:
            obj = res[port]
            if key == "Ports":
                obj.update(LinkNetworkTechnology=tech, CurrentSpeedGbps=gbps, LinkStatus="LinkUp")
            else:
                obj.update(ActiveLinkTechnology=tech, CurrentLinkSpeedMbps=gbps * 1000, LinkStatus="Up")
