"""The os stage's seed medium (a config drive): what the installer needs that only this node may have.

An ISO 9660 image with volume label CIDATA (cloud-init's NoCloud seed, which Ubuntu autoinstall and
cloud images read as they are) holding:

    meta-data                       instance-id and local-hostname (NoCloud)
    user-data                       #cloud-config: ssh_keys (the host key pair), hostname
    provision/ssh_host_ed25519_key  the node's private host key (mode 0600), for an installer that is not
    provision/ssh_host_ed25519_key.pub   cloud-init (the lab's; a kickstart %post or preseed late_command
    provision/hostname                   copies them into the target's /etc/ssh)

It is inserted as a second virtual medium beside the installer and ejected when the install is over; the
image itself (mode 0600) and the directory it is made in (0700) are removed then. Made with xorriso or
genisoimage, whichever the controller has.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from provision.errors import ProvisionError
from provision.remote.hostkeys import KEY_NAME

LABEL = "CIDATA"
TOOLS = ("xorriso", "genisoimage")


class SeedError(ProvisionError):
    """The seed medium could not be made."""


def seed_tool() -> str | None:
    """The ISO maker this controller has (None: neither)."""
    return next((t for t in TOOLS if shutil.which(t)), None)


def _user_data(hostname: str, private: str, public: str) -> str:
    # JSON is YAML: no YAML emitter's quoting rules to get right for a multi-line key
    doc = {"hostname": hostname, "ssh_deletekeys": True,
           "ssh_keys": {"ed25519_private": private, "ed25519_public": public}}
    return "#cloud-config\n" + json.dumps(doc, indent=1) + "\n"


def seed_tree(key_dir: Path, hostname: str, tree: Path) -> list[Path]:
    """The seed's files under `tree` from the key pair in `key_dir` (make_key_pair's); returns them. Served
    as they are over the network (NoCloud's nocloud-net reads meta-data and user-data under one URL)."""
    private = (key_dir / KEY_NAME).read_text(encoding="utf-8")
    public = (key_dir / f"{KEY_NAME}.pub").read_text(encoding="utf-8").strip()
    (tree / "provision").mkdir(parents=True, mode=0o700)
    (tree / "meta-data").write_text(f"instance-id: provision-{hostname}\nlocal-hostname: {hostname}\n")
    user = tree / "user-data"
    user.touch(mode=0o600)
    user.write_text(_user_data(hostname, private, public))
    shutil.copy2(key_dir / KEY_NAME, tree / "provision" / KEY_NAME)
    (tree / "provision" / KEY_NAME).chmod(0o600)
    (tree / "provision" / f"{KEY_NAME}.pub").write_text(public + "\n")
    (tree / "provision" / "hostname").write_text(hostname + "\n")
    return [tree / "meta-data", user, *(tree / "provision" / n for n in (KEY_NAME, f"{KEY_NAME}.pub", "hostname"))]


def build_seed(key_dir: Path, hostname: str, out: Path) -> Path:
    """The seed image at `out` from the key pair in `key_dir` (make_key_pair's); returns `out`."""
    tool = seed_tool()
    if tool is None:
        raise SeedError("no xorriso or genisoimage on this controller: needed to make the seed medium")
    tree = key_dir / "seed"
    seed_tree(key_dir, hostname, tree)
    out.touch(mode=0o600)
    argv = [tool, "-as", "mkisofs"] if tool == "xorriso" else [tool]
    argv += ["-quiet", "-R", "-J", "-V", LABEL, "-o", str(out), str(tree)]
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False)
    shutil.rmtree(tree, ignore_errors=True)
    if proc.returncode != 0:
        out.unlink(missing_ok=True)
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise SeedError(f"{tool} failed (exit {proc.returncode}) making the seed medium: {last[:200]}")
    out.chmod(0o600)
    return out
