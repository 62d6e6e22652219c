"""Where a report came from: provision's version, the inventory, a digest of the specs, the command line.

The spec digest is a sha256 over the spec as the checks judged it (canonical JSON, keys sorted), with one
exception: firmware image paths are left out, because the loader makes them absolute against wherever the
inventory was checked out; each image's sha256 stays in, so a different image still changes the digest.
Two controllers that judge the same spec print the same digest.

The command line is rebuilt from the options the command parsed (never from raw argv), then scrubbed of
every registered secret: an option whose name says password, secret or token prints as <redacted>.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import socket
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from provision.conformance.model import NodeReport, Provenance
from provision.redact import MASK, scrub
from provision.spec.model import NodeSpec

_SECRET_WORDS = ("password", "secret", "token")


def provision_version() -> str:
    """The installed package's version (one source: the package metadata)."""
    try:
        return version("provision")
    except PackageNotFoundError:  # running from a tree that was never installed
        return "unknown"


def spec_digest(spec: NodeSpec) -> str:
    """sha256 (hex) of the spec as judged, firmware image paths and the BMC takeover (`bmc:`) left out (see the
    module docstring)."""
    data = spec.model_dump(mode="json", exclude={"firmware": {"__all__": {"image"}}, "bmc": True})
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def run_digest(nodes: Iterable[NodeReport]) -> str:
    """sha256 over the sorted, distinct (profile, spec digest) pairs of a run's nodes."""
    pairs = sorted({f"{n.profile} {n.spec_digest}" for n in nodes if n.spec_digest})
    return hashlib.sha256("\n".join(pairs).encode()).hexdigest()


def _is_secret(names: Sequence[str]) -> bool:
    return any(word in name.lower() for name in names for word in _SECRET_WORDS)


def _words(value: Any) -> list[str]:
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return [str(value)]


def command_line(command_path: str, params: Sequence[Any], values: Mapping[str, Any]) -> str:
    """`provision verify node01 -i inv.yml --json r.json`, rebuilt from a click command's parsed parameters.

    `params` are the command's click Parameters, `values` the parsed values (ctx.params). Options left at
    their default are omitted; a secret-named option's value prints as <redacted>.
    """
    words = shlex.split(command_path)
    for param in params:
        value = values.get(param.name)
        if value is None or value is False or value == () or value == []:
            continue
        if getattr(param, "param_type_name", "") == "argument":
            words += _words(value)
            continue
        default = getattr(param, "default", None)
        if value == default or (default is not None and str(value) == str(default)):
            continue
        flag = max(param.opts, key=len)
        if value is True:
            words.append(flag)
        elif _is_secret(param.opts):
            words += [flag, MASK]
        else:
            for word in _words(value):
                words += [flag, word]
    return scrub(shlex.join(words))


def provenance(inventory: Path, nodes: Iterable[NodeReport], command: str) -> Provenance:
    """The provenance block of a run over `nodes` (whose spec digests are set)."""
    return Provenance(provision_version=provision_version(), inventory=str(inventory),
                      spec_digest=run_digest(nodes), command=command, host=socket.gethostname())
