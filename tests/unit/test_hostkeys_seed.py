"""The host key pair the os stage makes, the known_hosts entry it records, and the seed medium it hands the
installer: fingerprints as ssh-keygen prints them, one entry per node replaced in place, the private key
of mode 0600 inside a 0700 directory and inside the image (Rock Ridge keeps the mode), label CIDATA."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from provision.bringup.stages.seed import LABEL, build_seed, seed_tool
from provision.errors import InputError
from provision.remote import hostkeys
from provision.spec import SshEndpoint

needs_keygen = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")


@pytest.mark.parametrize(("host", "port", "pattern"), [("10.0.0.5", 22, "10.0.0.5"),
                                                       ("127.0.0.1", 2222, "[127.0.0.1]:2222")])
def test_host_pattern(host: str, port: int, pattern: str) -> None:
    assert hostkeys.host_pattern(SshEndpoint(host=host, port=port)) == pattern


@needs_keygen
def test_a_new_key_pair_its_fingerprint_and_mode(tmp_path: Path) -> None:
    home = hostkeys.private_dir(tmp_path / "root", "node01")
    public = hostkeys.make_key_pair(home, "root@node01")
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / hostkeys.KEY_NAME).stat().st_mode) == 0o600
    listed = subprocess.run(["ssh-keygen", "-l", "-f", str(home / f"{hostkeys.KEY_NAME}.pub")],
                            capture_output=True, text=True, check=True).stdout.split()
    assert hostkeys.fingerprint(public) == listed[1]
    (home / "stale").write_text("x")
    assert not (hostkeys.private_dir(tmp_path / "root", "node01") / "stale").exists()  # a killed run's


def test_a_private_root_open_to_others_is_refused(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir(mode=0o755)
    (tmp_path / "root").chmod(0o755)
    with pytest.raises(InputError, match="not open to others"):
        hostkeys.private_dir(tmp_path / "root", "node01")


def test_record_key_replaces_only_that_nodes_entry(tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("# comment\n[127.0.0.1]:2222 ssh-ed25519 AAAAold\n10.0.0.5 ssh-rsa AAAAother\n"
                     "[127.0.0.1]:22220 ssh-ed25519 AAAAneighbour\n")
    hostkeys.record_key(known, "[127.0.0.1]:2222", "ssh-ed25519 AAAAnew root@node01")
    assert hostkeys.expected_key(known, "[127.0.0.1]:2222") == "ssh-ed25519 AAAAnew"
    assert hostkeys.expected_key(known, "10.0.0.5") == "ssh-rsa AAAAother"
    assert hostkeys.expected_key(known, "[127.0.0.1]:22220") == "ssh-ed25519 AAAAneighbour"
    assert known.read_text().count("[127.0.0.1]:2222 ") == 1 and "AAAAold" not in known.read_text()
    assert hostkeys.expected_key(tmp_path / "absent", "x") is None


@needs_keygen
@pytest.mark.skipif(shutil.which("xorriso") is None or seed_tool() is None, reason="needs xorriso")
def test_the_seed_medium(tmp_path: Path) -> None:
    home = hostkeys.private_dir(tmp_path / "root", "node01")
    public = hostkeys.make_key_pair(home, "root@node01")
    image = build_seed(home, "node01", home / "seed.iso")
    assert stat.S_IMODE(image.stat().st_mode) == 0o600
    assert sorted(p.name for p in home.iterdir()) == sorted([hostkeys.KEY_NAME, f"{hostkeys.KEY_NAME}.pub",
                                                             "seed.iso"])  # the tree it was made from is gone
    out = tmp_path / "x"
    subprocess.run(["xorriso", "-osirrox", "on", "-indev", str(image), "-extract", "/", str(out)],
                   capture_output=True, check=True)
    info = subprocess.run(["xorriso", "-indev", str(image), "-pvd_info"], capture_output=True, text=True,
                          check=True).stdout
    assert f"Volume Id    : {LABEL}" in info
    private = out / "provision" / hostkeys.KEY_NAME
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert private.read_text() == (home / hostkeys.KEY_NAME).read_text()
    assert (out / "provision" / f"{hostkeys.KEY_NAME}.pub").read_text().strip() == public
    user = (out / "user-data").read_text()
    assert user.startswith("#cloud-config\n")
    doc = json.loads(user.split("\n", 1)[1])  # JSON is YAML: what cloud-init reads
    assert doc["ssh_keys"]["ed25519_public"] == public and "PRIVATE KEY" in doc["ssh_keys"]["ed25519_private"]
    assert "local-hostname: node01" in (out / "meta-data").read_text()
