"""The node-side fingerprint of what site.yml manages on a host, read in the same round trip as verify's facts.

Taken right after a successful apply and again on a re-run: equal fingerprints mean that none of these
changed on the node since: the files the run managed (type, mode, owner, sha256 of the content, a link's
target; "absent" where the run left none), the services it managed (enabled and active states), every
installed package with its version and dpkg state (so a removed, upgraded or unheld package shows), and the
kernel release, architecture and /etc/os-release. A probe whose command failed (a file that cannot be read,
no dpkg-query or systemctl) makes the fingerprint unavailable, never a match.

Not covered (state the roles set through commands, not files): a ZFS pool's properties, md array members,
runtime sysctl values, the content of secondary EFI partitions. Where the spec states them, verify's
checks taken in the same round trip cover them (provision.bringup.stages.configure); the rest only a
check-mode run or `--recheck` sees.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence

from provision.conformance.facts import NodeFacts, Probe

PREFIX = "configure."

_FILES = r"""rc=0
for p in {paths}; do
  if [ -L "$p" ]; then printf '%s link %s\n' "$p" "$(readlink -- "$p")" || rc=1
  elif [ -d "$p" ]; then stat -c '%n dir %a %U:%G' -- "$p" || rc=1
  elif [ -f "$p" ]; then stat -c '%n file %a %U:%G' -- "$p" && sha256sum -- "$p" || rc=1
  elif [ -e "$p" ]; then stat -c '%n %F %a %U:%G' -- "$p" || rc=1
  else printf '%s absent\n' "$p"; fi
done
exit $rc"""

_SERVICES = r"""command -v systemctl >/dev/null || exit 127
for s in {names}; do printf '%s %s %s\n' "$s" "$(systemctl is-enabled -- "$s" 2>&1)" \
  "$(systemctl is-active -- "$s" 2>&1)"; done"""

_PACKAGES = r"dpkg-query -W -f='${binary:Package} ${Version} ${db:Status-Abbrev}\n' | sort"
_SYSTEM = "uname -r && uname -m && cat /etc/os-release"


def probes(manifest: Mapping[str, Sequence[str]]) -> list[Probe]:
    """The probes of a manifest ({"file": [...], "service": [...]}); all names quoted for the shell."""
    found = [Probe(name=PREFIX + "packages", command=_PACKAGES), Probe(name=PREFIX + "system", command=_SYSTEM)]
    files = sorted(set(manifest.get("file", ())))
    if files:
        found.append(Probe(name=PREFIX + "files", command=_FILES.format(paths=_quoted(files))))
    services = sorted(set(manifest.get("service", ())))
    if services:
        found.append(Probe(name=PREFIX + "services", command=_SERVICES.format(names=_quoted(services))))
    return found


def _quoted(names: Sequence[str]) -> str:
    return " ".join(shlex.quote(n) for n in names)


class FingerprintUnavailable(ValueError):
    """A fingerprint probe did not answer cleanly: what it printed is no evidence of the node's state."""


def fingerprint(facts: NodeFacts, manifest: Mapping[str, Sequence[str]]) -> str:
    """sha256 over the fingerprint sections (pure); FingerprintUnavailable when one is missing or failed."""
    parts = []
    for probe in probes(manifest):
        section = facts.section(probe.name)
        if section is None:
            raise FingerprintUnavailable(f"{probe.name}: not in the node's answer")
        if not section.ok:
            why = (section.stderr.strip().splitlines() or [f"exit {section.rc}"])[-1]
            raise FingerprintUnavailable(f"{probe.name}: exit {section.rc}: {why[:200]}")
        parts.append([probe.name, section.stdout])
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()
