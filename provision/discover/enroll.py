"""`provision enroll`: new hosts for discovered BMCs, written into a YAML inventory.

plan (pure): each new, identified BMC with one profile gets a name from the operator's pattern; every other
one is listed with why it is left out. Duplicate names (among the new ones, or an existing host's) are
refused in one line. apply: one `host_vars/NAME.yml` per host (created, never replaced) and the host added
under its profile's group in the hosts file by a comment-preserving round trip (ruamel.yaml); every file
written to a temporary file and renamed; the result loaded again (`spec validate`'s loader) and everything
put back as it was when it does not load. Existing hosts are never changed.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import os
import re
import string
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from provision.discover.match import Standing, Verdict, meaningful
from provision.discover.probe import Found, Outcome
from provision.errors import InputError, InventoryError, ProvisionError
from provision.spec.strict_yaml import load_strict

PATTERN_FIELDS = {"index": 1, "rack": "r01", "serial": "S1", "uuid": "u", "mac": "aabbccddeeff", "ip": "10.0.0.1",
                  "manufacturer": "m", "model": "m", "profile": "p"}
PER_BMC = ("index", "serial", "uuid", "mac", "ip")
_HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class NewHost(BaseModel):
    """One host enroll writes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    profile: str
    group: str
    verdict: Verdict


class Skipped(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    address: str
    why: str


class EnrollPlan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    hosts: tuple[NewHost, ...] = ()
    skipped: tuple[Skipped, ...] = ()


def check_pattern(pattern: str) -> None:
    """Before anything is sent: only known fields, formats that apply, and a field that differs per BMC."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(pattern) if f is not None]
    except ValueError as exc:
        raise InputError(f"--name {pattern!r}: {exc}") from None
    for f in fields:
        if f not in PATTERN_FIELDS:
            raise InputError(f"--name {pattern!r}: unknown field {{{f}}} (known: "
                             f"{', '.join('{' + k + '}' for k in PATTERN_FIELDS)})")
    if not any(f in PER_BMC for f in fields):
        raise InputError(f"--name {pattern!r}: every BMC would get the same name (use one of "
                         f"{', '.join('{' + k + '}' for k in PER_BMC)})")
    _format(pattern, dict(PATTERN_FIELDS))


def _format(pattern: str, values: dict[str, Any]) -> str:
    try:
        return pattern.format(**values)
    except (ValueError, KeyError, IndexError) as exc:
        raise InputError(f"--name {pattern!r}: {exc}") from None


def plan(verdicts: list[Verdict], pattern: str, *, existing: set[str], groups: dict[str, str],
         profile: str | None = None, rack: str | None = None, start: int = 1,
         chooses: Callable[[str, Verdict], bool] | None = None) -> EnrollPlan:
    """Pure: the hosts to write and the BMCs left out. `groups`: profile -> the group that sets it;
    `chooses(profile, verdict)`: whether the operator's --profile describes the BMC (default: it fits)."""
    hosts: list[NewHost] = []
    skipped: list[Skipped] = []
    index = start
    twins = _shared_identities(verdicts)
    for v in sorted(verdicts, key=lambda v: _sort_key(v.found.ip, v.found.address)):
        why, chosen = _eligible(v, profile, chooses)
        if not why and v.found.address in twins:
            why = twins[v.found.address]
        if why:
            skipped.append(Skipped(address=v.found.address, why=why))
            continue
        assert chosen is not None
        group = groups.get(chosen)
        if group is None:
            skipped.append(Skipped(address=v.found.address, why=f"no group of the inventory sets provision_profile: "
                                   f"{chosen} (give --group)"))
            continue
        name = host_name(pattern, v, chosen, rack, index)
        index += 1
        hosts.append(NewHost(name=name, profile=chosen, group=group, verdict=v))
    _refuse_duplicates(pattern, hosts, existing)
    return EnrollPlan(hosts=tuple(hosts), skipped=tuple(skipped))


def _shared_identities(verdicts: list[Verdict]) -> dict[str, str]:
    """address -> why, for BMCs that give the same serial or UUID as another one found (which is which could
    never be told later)."""
    out: dict[str, str] = {}
    for key in ("serial", "uuid"):
        by: dict[str, list[str]] = {}
        for v in verdicts:
            value = meaningful(serial_of(v.found) if key == "serial" else v.found.uuid)
            if value is not None:
                by.setdefault(value.casefold(), []).append(v.found.address)
        for value, addresses in by.items():
            if len(addresses) > 1:
                for a in addresses:
                    out.setdefault(a, f"{key} {value} is given by {len(addresses)} BMCs ({', '.join(addresses)})")
    return out


def _eligible(v: Verdict, profile: str | None,
              chooses: Callable[[str, Verdict], bool] | None) -> tuple[str, str | None]:
    """('', profile) for a BMC to enroll; (why not, None) otherwise."""
    f = v.found
    if v.standing is Standing.KNOWN:
        return f"already in the inventory as {v.host}", None
    if v.standing is Standing.MOVED:
        return f"already in the inventory as {v.host} at {v.inventory_address} (moved; not changed)", None
    if v.standing is Standing.ADDRESS_TAKEN:
        return v.note, None
    if f.identity is None and not (vouched(f) and profile is not None):
        return f"not identified: {f.outcome.value}", None
    if f.identity is None:  # vouched for by the vendor's file and the operator's --profile
        return ("", profile) if not f.address.startswith("http://") else (
            "plain HTTP (the password would travel in clear): not enrolled", None)
    if not (meaningful(f.serial) or meaningful(f.uuid)):
        return "the BMC gives neither a serial nor a UUID (it could not be told apart later)", None
    if f.address.startswith("http://"):
        return "plain HTTP (the password would travel in clear): not enrolled", None
    if profile is not None:
        fits = chooses(profile, v) if chooses is not None else profile in v.fits
        return ("", profile) if fits else (f"profile {profile} does not describe {f.identity.name}", None)
    if not v.fits:
        return f"no profile describes {f.identity.name} (give --profile)", None
    if len(v.fits) > 1:
        return f"several profiles fit ({', '.join(v.fits)}): give --profile", None
    return "", v.fits[0]


def vouched(f: Found) -> bool:
    """A BMC that must have its password changed before it shows anything but its service root (DSP0266
    PasswordChangeRequired: the factory state of many) is enrolled as the operator's file says it is: the serial
    the vendor's file (CSV or lease) gives for its address, with the profile the operator names; bring-up's
    preflight reads its identity once the password is rotated."""
    return f.outcome is Outcome.PASSWORD_CHANGE and f.lease is not None and meaningful(f.lease.serial) is not None


def serial_of(f: Found) -> str | None:
    """The serial the BMC gives; for one `vouched` for, the vendor file's."""
    if f.serial:
        return f.serial
    return f.lease.serial if vouched(f) and f.lease is not None else None


def _sort_key(ip: str, address: str) -> tuple[int, int, str]:
    import ipaddress

    a = ipaddress.ip_address(ip)
    return a.version, int(a), address


def host_name(pattern: str, v: Verdict, profile: str, rack: str | None, index: int) -> str:
    f = v.found
    ident = f.identity
    values: dict[str, Any] = {
        "index": index, "rack": rack or "", "serial": serial_of(f) or "", "uuid": f.uuid or "",
        "mac": (f.bmc_mac or "").replace(":", ""), "ip": f.ip, "profile": profile,
        "manufacturer": (ident.manufacturer if ident else None) or "", "model": (ident.model if ident else None) or "",
    }
    name = _format(pattern, values)
    if not _HOST_NAME.match(name):
        raise InputError(f"--name {pattern!r}: gives {name!r} for the BMC at {f.address}, not a host name "
                         "(letters, digits, '.', '_' and '-', starting with a letter or digit); nothing written")
    return name


def _refuse_duplicates(pattern: str, hosts: list[NewHost], existing: set[str]) -> None:
    seen: dict[str, str] = {}
    for h in hosts:
        if h.name in existing:
            raise InputError(f"--name {pattern!r}: {h.name} (BMC at {h.verdict.found.address}) is already a host "
                             "of the inventory; nothing written")
        if h.name in seen:
            raise InputError(f"--name {pattern!r}: {h.name} for both {seen[h.name]} and {h.verdict.found.address}; "
                             "nothing written")
        seen[h.name] = h.verdict.found.address


# ---- the inventory's files ------------------------------------------------------------------------------
def hosts_file(inventory: Path) -> Path:
    """The YAML hosts file enroll edits: `-i` itself, or hosts.yml/hosts.yaml in the `-i` directory."""
    if inventory.is_file():
        if inventory.suffix not in (".yml", ".yaml"):
            raise InventoryError(f"{inventory}: enroll writes YAML inventories only (hosts.yml)")
        return inventory
    for name in ("hosts.yml", "hosts.yaml"):
        if (inventory / name).is_file():
            return inventory / name
    raise InventoryError(f"{inventory}: no hosts.yml to enroll into")


def profile_groups(base: Path) -> dict[str, str]:
    """profile -> the one group whose group_vars set `provision_profile` to it (a profile two groups set is
    left out: --group then says which)."""
    found: dict[str, list[str]] = {}
    gv = base / "group_vars"
    if not gv.is_dir():
        return {}
    for entry in sorted(gv.iterdir()):
        files = [entry] if entry.is_file() and entry.suffix in (".yml", ".yaml") else (
            sorted(p for p in entry.iterdir() if p.suffix in (".yml", ".yaml")) if entry.is_dir() else [])
        group = entry.stem if entry.is_file() else entry.name
        for path in files:
            data = load_strict(path, allow_empty=True)
            if isinstance(data, dict) and isinstance(data.get("provision_profile"), str):
                found.setdefault(data["provision_profile"], []).append(group)
    return {p: gs[0] for p, gs in found.items() if len(set(gs)) == 1}


def host_vars_text(h: NewHost, ca_file: Path | None, when: datetime.datetime) -> str:
    """The host's own vars file: its BMC address, the CA it is verified against, its rack and identity."""
    import yaml

    f = h.verdict.found
    ident = f.identity
    data: dict[str, Any] = {"provision_bmc_address": f.address}
    if ca_file is not None:
        data["provision_bmc_ca_file"] = str(ca_file.resolve())
    identity = {"manufacturer": ident.manufacturer if ident else None, "model": ident.model if ident else None,
                "serial": serial_of(f), "uuid": f.uuid, "bmc_mac": f.bmc_mac or (f.lease.mac if vouched(f) and f.lease
                                                                                   else None),
                "bmc_firmware": f.firmware}
    data["provision_bmc_identity"] = {k: v for k, v in identity.items() if v}
    head = (f"---\n# Written by `provision enroll` on {when:%Y-%m-%d %H:%M} UTC from the BMC at {f.address}\n"
            f"# (profile {h.profile}, group {h.group}).\n")
    return head + yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def apply(inventory: Path, enroll: EnrollPlan, *, rack: str | None, ca_file: Path | None,
          validate: Callable[[Path], object]) -> list[Path]:
    """Write the plan's hosts (module docstring); `validate(inventory)` must load the result, else every file
    is put back. Returns the files written."""
    if not enroll.hosts:
        return []
    hosts_path = hosts_file(inventory)
    base = hosts_path.parent
    hv_dir = base / "host_vars"
    for h in enroll.hosts:  # checked before anything is written
        for p in (hv_dir / f"{h.name}.yml", hv_dir / f"{h.name}.yaml", hv_dir / h.name):
            if p.exists():
                raise InventoryError(f"{p}: already exists (host {h.name}); nothing written")
    with _locked(base):  # two enrolls at once: the second reads the hosts file the first wrote
        return _write(inventory, enroll, hosts_path, hv_dir, rack=rack, ca_file=ca_file, validate=validate)


def _write(inventory: Path, enroll: EnrollPlan, hosts_path: Path, hv_dir: Path, *, rack: str | None,
           ca_file: Path | None, validate: Callable[[Path], object]) -> list[Path]:
    original = hosts_path.read_bytes()
    new_hosts = add_hosts(original.decode("utf-8"), [(h.group, h.name) for h in enroll.hosts], str(hosts_path))
    when = datetime.datetime.now(datetime.UTC)
    written: list[Path] = []
    try:
        hv_dir.mkdir(exist_ok=True)
        for h in enroll.hosts:
            text = host_vars_text(h, ca_file, when)
            if rack:
                text += f"provision_rack: {rack}\n"
            written.append(_create(hv_dir / f"{h.name}.yml", text))
        _replace(hosts_path, new_hosts)
        validate(inventory)
    except (ProvisionError, OSError) as exc:
        _replace(hosts_path, original.decode("utf-8"))
        for p in written:
            with contextlib.suppress(OSError):
                p.unlink()
        if isinstance(exc, OSError):
            raise InventoryError(f"{exc.filename or hosts_path}: {exc.strerror}; nothing written") from None
        raise InventoryError(f"{hosts_path}: the enrolled inventory does not load ({exc}); put back as it was, "
                             "nothing written") from None
    return [*written, hosts_path]


def add_hosts(text: str, additions: list[tuple[str, str]], where: str) -> str:
    """The hosts file with each (group, host) added under that group's `hosts:` (comments, order and the
    other entries kept: a ruamel.yaml round trip)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap

    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    yaml.explicit_start = text.lstrip().startswith("---")
    data = yaml.load(text)
    for group, host in additions:
        node = _find_group(data, group)
        if node is None:  # its group_vars file exists (profile_groups found it there): the group joins all
            node = _new_group(data, group, where)
        hosts = node.get("hosts")
        if hosts is None:
            node["hosts"] = hosts = CommentedMap()
        if not isinstance(hosts, dict):
            raise InventoryError(f"{where}: group {group}: hosts is not a mapping; nothing written")
        hosts[host] = None
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _new_group(top: Any, group: str, where: str) -> Any:
    """`group` added (empty) under `all: children:`."""
    from ruamel.yaml.comments import CommentedMap

    root = top.get("all") if isinstance(top, dict) else None
    if not isinstance(root, dict):
        raise InventoryError(f"{where}: no `all:` group to add group {group} under; add the group (or give "
                             "--group); nothing written")
    children = root.get("children")
    if children is None:
        root["children"] = children = CommentedMap()
    if not isinstance(children, dict):
        raise InventoryError(f"{where}: all.children is not a mapping; nothing written")
    children[group] = body = CommentedMap()
    return body


def _find_group(top: Any, group: str) -> Any:
    """The body of `group` among the top-level groups or any `children:` under them (breadth first); an empty
    body (`group:` with nothing under it) becomes a mapping."""
    from ruamel.yaml.comments import CommentedMap

    queue: list[Any] = [top] if isinstance(top, dict) else []
    while queue:
        level = queue.pop(0)
        for name, body in level.items():
            if name == group and (body is None or isinstance(body, dict)):
                if body is None:
                    level[name] = body = CommentedMap()
                return body
            children = body.get("children") if isinstance(body, dict) else None
            if isinstance(children, dict):
                queue.append(children)
    return None


@contextlib.contextmanager
def _locked(base: Path) -> Iterator[None]:
    """An exclusive flock on the inventory directory itself (no lock file left in it for Ansible to read)."""
    import fcntl

    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _temp_beside(path: Path, text: str, mode: int) -> str:
    """`text` in a new temporary file beside `path`, synced to disk, with `mode`; its name (removed on failure)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def _create(path: Path, text: str) -> Path:
    """A new file, atomically: written to a temporary file beside it, then linked in (never replacing)."""
    tmp = _temp_beside(path, text, 0o644)
    try:
        os.link(tmp, path)  # fails if the file appeared meanwhile: nothing replaced
    finally:
        os.unlink(tmp)
    return path


def _replace(path: Path, text: str) -> None:
    """Replace `path`'s content atomically (temporary file, fsync, rename), keeping its mode."""
    tmp = _temp_beside(path, text, path.stat().st_mode & 0o7777)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
