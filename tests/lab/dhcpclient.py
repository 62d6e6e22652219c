"""LAB TEST HELPER: a minimal DHCP client (RFC 2131) standing for a node's firmware, and a TFTP read (RFC 1350).

Run inside a network namespace (`ip netns exec NS python tests/lab/dhcpclient.py IFACE MAC [--pxe|--ipxe|--http]
[--tftp FILE] [--wait S] [--from ADDRESS]`): it sends DISCOVER for MAC as the firmware named would (PXE: vendor class PXEClient, client
arch 7; iPXE: user class iPXE and option 175; UEFI HTTP boot: HTTPClient, arch 16), REQUESTs what is offered
(a full DHCP server's offer; a proxy's has no address), and prints one JSON object: the offer's and the
ack's address, next server, boot file and options (as text), and the TFTP file's size when asked.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import time
from typing import Any

COOKIE = b"\x63\x82\x53\x63"


def _options(opts: list[tuple[int, bytes]]) -> bytes:
    return b"".join(bytes([code, len(v)]) + v for code, v in opts) + b"\xff"


def packet(mac: bytes, xid: int, kind: int, extra: list[tuple[int, bytes]]) -> bytes:
    head = struct.pack("!BBBBIHH4s4s4s4s16s64s128s", 1, 1, 6, 0, xid, 0, 0x8000, b"\0" * 4, b"\0" * 4, b"\0" * 4,
                       b"\0" * 4, mac + b"\0" * 10, b"\0" * 64, b"\0" * 128)
    return head + COOKIE + _options([(53, bytes([kind])), *extra])


def parse(data: bytes) -> dict[str, Any]:
    xid = struct.unpack("!I", data[4:8])[0]
    yiaddr, siaddr = socket.inet_ntoa(data[16:20]), socket.inet_ntoa(data[20:24])
    file = data[108:236].split(b"\0", 1)[0].decode(errors="replace")
    opts: dict[int, bytes] = {}
    i = 240
    while i < len(data) and data[i] != 0xFF:
        if data[i] == 0:
            i += 1
            continue
        code, length = data[i], data[i + 1]
        opts[code] = data[i + 2:i + 2 + length]
        i += 2 + length
    return {"xid": xid, "yiaddr": yiaddr, "siaddr": siaddr, "file": file,
            "options": {str(k): v.decode(errors="replace") if k in (60, 67) else v.hex() for k, v in opts.items()},
            "type": opts.get(53, b"\0")[0], "server": socket.inet_ntoa(opts[54]) if 54 in opts else None}


def exchange(sock: socket.socket, data: bytes, xid: int, want: int, timeout: float) -> dict[str, Any] | None:
    sock.sendto(data, ("255.255.255.255", 67))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            got, _ = sock.recvfrom(4096)
        except TimeoutError:
            break
        reply = parse(got)
        if reply["xid"] == xid and reply["type"] == want:
            return reply
    return None


def boot_server(mac: bytes, extra: list[tuple[int, bytes]], server: str, source: str, wait: float
                ) -> dict[str, Any] | None:
    """PXE after a proxy's offer: a REQUEST to the boot server (port 4011) from the address the site's DHCP
    gave (`source`), answered with the boot file."""
    xid = int.from_bytes(os.urandom(4), "big")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((source, 0))
        s.settimeout(wait)
        s.sendto(packet(mac, xid, 3, extra), (server, 4011))
        try:
            got, _ = s.recvfrom(4096)
        except TimeoutError:
            return None
    return parse(got)


def tftp(server: str, name: str, source: str) -> int:
    """Bytes of `name` read from `server` over TFTP from address `source` (-1: no answer, -2: an error packet)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((source, 0))
        s.settimeout(3)
        s.sendto(b"\0\1" + name.encode() + b"\0octet\0", (server, 69))
        size, block = 0, 1
        while True:
            try:
                data, peer = s.recvfrom(4 + 65536)
            except TimeoutError:
                return -1
            if data[:2] == b"\0\5":
                return -2
            if data[:2] == b"\0\3" and struct.unpack("!H", data[2:4])[0] == block:
                size += len(data) - 4
                s.sendto(b"\0\4" + data[2:4], peer)
                if len(data) - 4 < 512:
                    return size
                block += 1


def main(argv: list[str]) -> int:
    iface, mac_text, *rest = argv
    mac = bytes.fromhex(mac_text.replace(":", ""))
    extra: list[tuple[int, bytes]] = []
    if "--pxe" in rest:
        extra += [(60, b"PXEClient:Arch:00007:UNDI:003016"), (93, b"\0\7")]
    if "--http" in rest:
        extra += [(60, b"HTTPClient:Arch:00016:UNDI:003001"), (93, b"\0\x10")]
    if "--ipxe" in rest:
        extra += [(60, b"PXEClient:Arch:00007:UNDI:003010"), (93, b"\0\7"), (77, b"iPXE"), (175, b"\x13\x01\x01")]
    # dnsmasq pings an address before it first offers it (3 s): a first offer takes that long
    wait = float(rest[rest.index("--wait") + 1]) if "--wait" in rest else 8.0
    xid = int.from_bytes(os.urandom(4), "big")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, iface.encode())
        sock.bind(("", 68))
        offer = exchange(sock, packet(mac, xid, 1, extra), xid, 2, wait)
        ack = None
        if offer is not None and offer["yiaddr"] != "0.0.0.0" and offer["server"]:
            req = [(50, socket.inet_aton(offer["yiaddr"])), (54, socket.inet_aton(offer["server"])), *extra]
            ack = exchange(sock, packet(mac, xid, 3, req), xid, 5, wait)
    out: dict[str, Any] = {"offer": offer, "ack": ack}
    if "--from" in rest and offer is not None and offer["yiaddr"] == "0.0.0.0":  # a proxy's offer: ask its
        out["boot"] = boot_server(mac, extra, str(offer["server"]), rest[rest.index("--from") + 1], wait)  # :4011
    if "--tftp" in rest and ack is not None:  # as firmware does: from the address it was given
        subprocess.run(["ip", "addr", "replace", f"{ack['yiaddr']}/24", "dev", iface], check=True)
        out["tftp"] = tftp(ack["siaddr"], rest[rest.index("--tftp") + 1], ack["yiaddr"])
    elif "--tftp" in rest and out.get("boot"):
        out["tftp"] = tftp(out["boot"]["siaddr"], rest[rest.index("--tftp") + 1], rest[rest.index("--from") + 1])
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
