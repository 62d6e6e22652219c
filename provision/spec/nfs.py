"""NFS checkpoint mounts of the spec: where a node class mounts its shared model checkpoints.

The seed (5.4) asks that "NFS mounts for model checkpoints should be validated for read/write consistency
regularly"; the nfs_client role mounts these and the `nfs` conformance area probes them. The mount options
are parsed here once (`NfsOptions`), so the role and the probe read the same typed values.

Operator rule: `soft` is refused unless the mount sets `allow_soft: true`. A soft mount returns EIO to the
writer once `timeo` x `retrans` expire, so a checkpoint written during a server hiccup can be silently
short: the failure the seed's consistency probe exists to catch. Whoever wants it must say so in the spec.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*$")
_PATH = re.compile(r"^/(?:[A-Za-z0-9._@+-]+/?)*$")
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
VERSIONS = ("3", "4", "4.0", "4.1", "4.2")
NCONNECT_MAX = 16  # the Linux client's limit (NFS_MAX_CONNECTIONS)
# Options that take a value (name -> check) and flags, as nfs(5) and mount(8) name them.
_NUMBER = re.compile(r"^[0-9]+$")
VALUED: dict[str, Callable[[str], object]] = {
    "vers": lambda v: v in VERSIONS, "nfsvers": lambda v: v in VERSIONS, "minorversion": _NUMBER.match,
    "nconnect": _NUMBER.match, "rsize": _NUMBER.match, "wsize": _NUMBER.match, "timeo": _NUMBER.match,
    "retrans": _NUMBER.match, "port": _NUMBER.match, "acregmin": _NUMBER.match, "acregmax": _NUMBER.match,
    "acdirmin": _NUMBER.match, "acdirmax": _NUMBER.match, "actimeo": _NUMBER.match,
    "proto": lambda v: v in ("tcp", "tcp6", "rdma", "rdma6"),
    "sec": lambda v: v in ("sys", "krb5", "krb5i", "krb5p", "none"),
    "lookupcache": lambda v: v in ("all", "none", "pos", "positive"),
    "local_lock": lambda v: v in ("none", "all", "flock", "posix"),
    "clientaddr": lambda v: bool(v), "mountport": _NUMBER.match, "mountproto": lambda v: v in ("tcp", "udp"),
    "x-systemd.mount-timeout": _NUMBER.match, "x-systemd.idle-timeout": _NUMBER.match,
}  # fmt: skip
FLAGS = {
    "hard", "soft", "softerr", "intr", "nointr", "ac", "noac", "cto", "nocto", "lock", "nolock", "sharecache",
    "nosharecache", "resvport", "noresvport", "fsc", "nofsc", "rw", "ro", "noatime", "nodiratime", "relatime",
    "nosuid", "nodev", "noexec", "_netdev", "nofail", "x-systemd.automount", "rdirplus", "nordirplus",
}


class NfsOptions(BaseModel):
    """The parsed option string: vers, hard/soft and nconnect typed; the rest kept in order as written."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    vers: str | None = Field(default=None, description="As written; 4 means the highest 4.x both sides speak")
    hard: bool = True
    nconnect: int | None = None
    items: tuple[str, ...] = Field(description="Every option as written, in order")

    @property
    def text(self) -> str:
        return ",".join(self.items)


def parse_options(text: str) -> NfsOptions:
    """`vers=4.2,hard,nconnect=8` -> NfsOptions; ValueError (one line) naming the bad option."""
    items = tuple(p.strip() for p in text.split(",") if p.strip())
    if not items:
        raise ValueError("no options (write at least vers=..., e.g. vers=4.2,hard)")
    values: dict[str, str] = {}
    flags: set[str] = set()
    for item in items:
        name, eq, value = item.partition("=")
        if eq:
            check = VALUED.get(name)
            if check is None:
                raise ValueError(f"option {name!r} takes no value or is not an NFS mount option (nfs(5))")
            if not check(value):
                raise ValueError(f"option {item!r}: bad value" + (f" (vers is one of {', '.join(VERSIONS)})"
                                                                  if name in ("vers", "nfsvers") else ""))
            if name in values:
                raise ValueError(f"option {name!r} given twice")
            values[name] = value
        elif name in FLAGS:
            flags.add(name)
        else:
            raise ValueError(f"unknown NFS mount option {name!r} (nfs(5))")
    if {"hard", "soft"} <= flags or {"hard", "softerr"} <= flags:
        raise ValueError("both hard and soft given")
    if "vers" in values and "nfsvers" in values:
        raise ValueError("both vers and nfsvers given")
    nconnect = int(values["nconnect"]) if "nconnect" in values else None
    if nconnect is not None and not 1 <= nconnect <= NCONNECT_MAX:
        raise ValueError(f"nconnect={nconnect}: the Linux client allows 1..{NCONNECT_MAX}")
    vers = values.get("vers") or values.get("nfsvers")
    return NfsOptions(vers=vers, hard=not flags & {"soft", "softerr"},
                      nconnect=nconnect, items=items)


class NfsMount(BaseModel):
    """One NFS checkpoint mount: what to mount where, with which options, and how much room it must have."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    name: str = Field(description="Short name (check ids: nfs.<name>.*)")
    server: str = Field(description="NFS server: a host name or an IP address")
    export: str = Field(description="Absolute path the server exports")
    mountpoint: str = Field(description="Absolute path on the node")
    options: str = Field(default="vers=4.2,hard", description="fstab options, e.g. vers=4.2,hard,nconnect=8")
    min_free_gib: Annotated[float, Field(ge=0)] = Field(default=0, description="Free space the mount must show")
    shared: bool = Field(default=False,
                         description="Other nodes mount the same export: verify reads on one node what another wrote")
    allow_soft: bool = Field(default=False, description="Acknowledge a soft mount (EIO mid-write; see the module)")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"{value!r} is not a mount name (lower case letters, digits, - and _; 32 at most)")
        return value

    @field_validator("server")
    @classmethod
    def _server(cls, value: str) -> str:
        try:
            ipaddress.ip_address(value)
        except ValueError:
            if not _HOSTNAME.match(value):
                raise ValueError(f"{value!r} is neither a host name nor an IP address") from None
        return value

    @field_validator("export", "mountpoint")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not _PATH.match(value) or "/../" in f"{value}/" or "/./" in f"{value}/":
            raise ValueError(f"{value!r} is not an absolute path (/, letters, digits, . _ @ + -; no . or ..)")
        return value.rstrip("/") or "/"

    @field_validator("options")
    @classmethod
    def _options(cls, value: str) -> str:
        parse_options(value)
        return value

    @model_validator(mode="after")
    def _soft_acknowledged(self) -> NfsMount:
        if self.mountpoint == "/":
            raise ValueError(f"mount {self.name}: mountpoint / is the root filesystem")
        if not self.parsed.hard and not self.allow_soft:
            raise ValueError(f"mount {self.name}: soft mounts can cut checkpoints short on a server hiccup; "
                             "use hard, or set allow_soft: true to accept it")
        return self

    @property
    def parsed(self) -> NfsOptions:
        return parse_options(self.options)

    @property
    def source(self) -> str:
        host = f"[{self.server}]" if ":" in self.server else self.server
        return f"{host}:{self.export}"

    @property
    def fstype(self) -> str:
        return "nfs" if self.parsed.vers == "3" else "nfs4"


def unique_mounts(mounts: tuple[NfsMount, ...]) -> tuple[NfsMount, ...]:
    """Names and mountpoints appear once (ValueError naming the repeat)."""
    for attr in ("name", "mountpoint"):
        seen: set[str] = set()
        for m in mounts:
            value = getattr(m, attr)
            if value in seen:
                raise ValueError(f"two NFS mounts with {attr} {value}")
            seen.add(value)
    return mounts
