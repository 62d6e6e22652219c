"""The node's own tools for a clean: each command with the parser of its output (pure, tested on captures).

Commands run over SSH as the node's login user (root on the nodes this project installs). Device paths come
from `nvme list` and mdadm, never from an operator, and are quoted all the same.
"""

from __future__ import annotations

import json
import re
import shlex

from provision.clean.model import MIB, EraseMethod, SanitizeLog, SanitizeStatus, ZeroRead
from provision.errors import ParseError

TOOL_SANITIZE_LOG = "nvme sanitize-log -o json"
TOOL_READ_BACK = "read back of the first and last MiB"
TOOL_ZPOOLS = "zpool list -H -o name"
TOOL_MD_SCAN = "mdadm --detail --scan"

SPROG_IDLE = 65535
"""SPROG when no sanitize is in progress (NVMe Base Specification, Sanitize Status log)."""
SANACT = {EraseMethod.SANITIZE_BLOCK: 2, EraseMethod.SANITIZE_CRYPTO: 4}
"""Sanitize Action: 2 block erase, 4 crypto erase."""
SES = {EraseMethod.FORMAT_USER: 1, EraseMethod.FORMAT_CRYPTO: 2}
"""Format NVM Secure Erase Settings: 1 user data erase, 2 cryptographic erase."""
_STATUS = {0: SanitizeStatus.NEVER, 1: SanitizeStatus.COMPLETED, 2: SanitizeStatus.IN_PROGRESS,
           3: SanitizeStatus.FAILED, 4: SanitizeStatus.COMPLETED_NO_DEALLOCATE}
_CODE = re.compile(r"^\((\d+)\)")


def q(path: str) -> str:
    return shlex.quote(path)


def controller_of(device: str) -> str:
    """/dev/nvme3n1 -> /dev/nvme3 (the controller a namespace belongs to)."""
    match = re.fullmatch(r"(/dev/nvme\d+)n\d+", device)
    if match is None:
        raise ParseError("nvme list", f"{device!r} is not an NVMe namespace device")
    return match[1]


def erase_command(method: EraseMethod, device: str, controller: str) -> str:
    """The one command that starts the erase (a sanitize runs on in the controller; its log says when done)."""
    if method.is_sanitize:
        return f"nvme sanitize {q(controller)} --sanact={SANACT[method]}"
    return f"nvme format {q(device)} --ses={SES[method]} --force"


def sanitize_log_command(controller: str) -> str:
    return f"nvme sanitize-log {q(controller)} -o json"


def parse_sanitize_log(text: str) -> SanitizeLog:
    """`nvme sanitize-log -o json`: nvme-cli 2.x nests the page under the device name and prints SSTAT as an
    object whose status is a string "(N) text" (under "status", or under the text itself in later versions);
    1.x printed SSTAT as an integer. Both are read; the status is SSTAT bits 2:0."""
    try:
        root = json.loads(text)
    except ValueError:
        raise ParseError(TOOL_SANITIZE_LOG, "not JSON") from None
    page = root if isinstance(root, dict) and "sprog" in root else next(
        (v for v in root.values() if isinstance(v, dict) and "sprog" in v), None) if isinstance(root, dict) else None
    if page is None:
        raise ParseError(TOOL_SANITIZE_LOG, "no sanitize log page (sprog) in the output")
    sprog, sstat = page.get("sprog"), page.get("sstat")
    if not isinstance(sprog, int) or isinstance(sprog, bool):
        raise ParseError(TOOL_SANITIZE_LOG, f"sprog should be an integer, got {sprog!r:.40}")
    if isinstance(sstat, int) and not isinstance(sstat, bool):
        code, erased = sstat & 0x7, bool(sstat & 0x100)
    elif isinstance(sstat, dict):
        codes = [int(m[1]) for v in sstat.values() if isinstance(v, str) and (m := _CODE.match(v))]
        if not codes:
            raise ParseError(TOOL_SANITIZE_LOG, "sstat has no status \"(N) ...\"")
        code, erased = codes[0], bool(sstat.get("global_erased"))
    else:
        raise ParseError(TOOL_SANITIZE_LOG, f"sstat should be an integer or an object, got {sstat!r:.40}")
    if code not in _STATUS:
        raise ParseError(TOOL_SANITIZE_LOG, f"sanitize status {code} is reserved")
    return SanitizeLog(status=_STATUS[code], progress=sprog, global_erased=erased)


def read_back_command(device: str) -> str:
    """Bytes read and bytes not zero of the first and the last MiB, one count a line (the size from the
    kernel: blockdev --getsize64)."""
    return (f"set -e; d={q(device)}; size=$(blockdev --getsize64 \"$d\"); "
            f"for skip in 0 $((size / {MIB} - 1)); do "
            "dd if=\"$d\" bs=1M count=1 skip=$skip status=none | wc -c; "
            "dd if=\"$d\" bs=1M count=1 skip=$skip status=none | tr -d '\\000' | wc -c; done")


def parse_read_back(text: str) -> ZeroRead:
    """Four counts, one a line: first MiB read, not zero; last MiB read, not zero."""
    numbers = text.split()
    if len(numbers) != 4 or not all(n.isdigit() for n in numbers):
        raise ParseError(TOOL_READ_BACK, f"expected four counts, got {text.strip()[:80]!r}")
    first, first_nz, last, last_nz = (int(n) for n in numbers)
    return ZeroRead(first_bytes=first, first_nonzero=first_nz, last_bytes=last, last_nonzero=last_nz)


def parse_zpools(text: str) -> tuple[str, ...]:
    """`zpool list -H -o name`: one pool a line (an older zpool's "no pools available" is none)."""
    return tuple(line.strip() for line in text.splitlines() if line.strip() and line.strip() != "no pools available")


def parse_md_scan(text: str) -> tuple[str, ...]:
    """`mdadm --detail --scan`: the array devices of its ARRAY lines."""
    return tuple(parts[1] for line in text.splitlines() if len(parts := line.split()) > 1 and parts[0] == "ARRAY")
