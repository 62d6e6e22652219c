"""The spec's NFS checkpoint mounts: what is accepted, and the one-line reason for what is not (as tables)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from provision.spec.nfs import NfsMount, parse_options, unique_mounts

GOOD = {"name": "ckpt", "server": "10.0.0.5", "export": "/export/ckpt", "mountpoint": "/mnt/ckpt"}


@pytest.mark.parametrize(("text", "vers", "hard", "nconnect"), [
    ("vers=4.2,hard,nconnect=8", "4.2", True, 8),
    ("nfsvers=3,hard,proto=tcp", "3", True, None),
    ("vers=4.1", "4.1", True, None),
    ("vers=4,soft,timeo=600,retrans=2", "4", False, None),
    ("vers=4.2,softerr,_netdev,nofail,x-systemd.automount", "4.2", False, None),
    (" vers=4.2 , hard ,", "4.2", True, None),
])
def test_options_parse(text: str, vers: str, hard: bool, nconnect: int | None) -> None:
    got = parse_options(text)
    assert (got.vers, got.hard, got.nconnect) == (vers, hard, nconnect)


@pytest.mark.parametrize(("text", "why"), [
    ("", "no options"),
    ("vers=5", "bad value (vers is one of"),
    ("vers=4.3,hard", "bad value"),
    ("nconnect=0", "1..16"),
    ("nconnect=17", "1..16"),
    ("nconnect=many", "bad value"),
    ("hard,soft", "both hard and soft"),
    ("vers=4.2,nfsvers=4.2", "both vers and nfsvers"),
    ("vers=4.2,vers=4.1", "given twice"),
    ("vers=4.2,hrad", "unknown NFS mount option 'hrad'"),
    ("hard=1", "takes no value"),
    ("proto=udp", "bad value"),
    ("sec=krb6", "bad value"),
])
def test_bad_options_say_which(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=None) as exc:
        parse_options(text)
    assert why in str(exc.value)


@pytest.mark.parametrize(("change", "why"), [
    ({"server": "nfs server"}, "neither a host name nor an IP address"),
    ({"server": "-nfs"}, "neither a host name"),
    ({"server": ""}, "neither a host name"),
    ({"export": "export/ckpt"}, "not an absolute path"),
    ({"export": "/export/../etc"}, "not an absolute path"),
    ({"mountpoint": "mnt"}, "not an absolute path"),
    ({"mountpoint": "/"}, "root filesystem"),
    ({"mountpoint": "/mnt/ck pt"}, "not an absolute path"),
    ({"options": "vers=4.2,soft"}, "set allow_soft: true"),
    ({"min_free_gib": -1}, "greater than or equal to 0"),
    ({"name": "Ckpt"}, "not a mount name"),
    ({"colour": "red"}, "Extra inputs"),
])
def test_bad_mounts_say_why(change: dict[str, object], why: str) -> None:
    with pytest.raises(ValidationError) as exc:
        NfsMount.model_validate({**GOOD, **change})
    assert why in str(exc.value)


def test_good_mounts_and_their_derived_values() -> None:
    v6 = NfsMount.model_validate({**GOOD, "server": "fd00::5", "options": "vers=4.2,soft", "allow_soft": True})
    assert v6.source == "[fd00::5]:/export/ckpt" and v6.fstype == "nfs4" and not v6.parsed.hard
    v3 = NfsMount.model_validate({**GOOD, "server": "nfs-1.example.net", "options": "vers=3,hard",
                                  "mountpoint": "/mnt/ckpt/"})
    assert v3.fstype == "nfs" and v3.mountpoint == "/mnt/ckpt"


def test_names_and_mountpoints_are_unique() -> None:
    one = NfsMount.model_validate(GOOD)
    with pytest.raises(ValueError, match="two NFS mounts with name ckpt"):
        unique_mounts((one, one.model_copy(update={"mountpoint": "/mnt/other"})))
    with pytest.raises(ValueError, match="mountpoint /mnt/ckpt"):
        unique_mounts((one, one.model_copy(update={"name": "other"})))
