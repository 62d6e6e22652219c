"""The campaign file: the example loads; every bad input is one InputError naming file and key."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
import yaml

from provision.campaign import catalog as catalog_module
from provision.campaign.catalog import Match, load_catalog
from provision.errors import InputError

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "campaigns" / "ml_prod_v4_2026q4.yml"


@pytest.fixture
def example_dir(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "firmware", tmp_path / "firmware")
    (tmp_path / "campaigns").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "campaigns" / "c.yml")
    return tmp_path / "campaigns" / "c.yml"


def test_example_loads_in_dependency_order() -> None:
    cat = load_catalog(EXAMPLE)
    assert cat.name == "ml_prod_v4_2026q4"
    assert [c.component for c in cat.ordered()] == ["bmc", "bios", "gpu", "nvswitch", "ib_nic"]
    gpu = cat.component("gpu").target  # each image names its platform and its FirmwareInventory entries
    assert [str(p) for p in gpu.platforms] == ["Supermicro SYS-821GE-TNHR"]
    [sel] = gpu.entries
    assert sel.matches("HGX_FW_GPU_SXM_3", "0x0020", "NVIDIA", ())
    assert not sel.matches("HGX_InfoROM_GPU_SXM_3", "0x0020", "NVIDIA", ())
    assert not sel.matches("HGX_FW_GPU_SXM_3", "0x0070", "NVIDIA", ())  # an NVSwitch's SoftwareId


def test_after_overrides_order() -> None:
    from provision.campaign.catalog import Catalog

    comps = [
        {"component": "a", "version": "1", "image": "a", "sha256": "0" * 64, "order": 1, "after": ["b"]},
        {"component": "b", "version": "1", "image": "b", "sha256": "0" * 64, "order": 9},
        {"component": "c", "version": "1", "image": "c", "sha256": "0" * 64, "order": 5},
    ]
    comps = [{**c, "applies_to": "any"} for c in comps]
    cat = Catalog.model_validate({"name": "x", "components": comps})
    assert [c.component for c in cat.ordered()] == ["c", "b", "a"]


@pytest.mark.parametrize(
    ("rule", "member", "expected"),
    [
        ("^BMC$", ("BMC", "x"), True),
        ("^BMC$", ("x", "BMC"), True),
        ("^BMC$", ("BMC_1", "x"), False),
        ({"id": "^NIC[0-9]+$", "name": "MCX75310"}, ("NIC1", "NIC1 System Slot1 MCX75310AAS-NEAT"), True),
        ({"id": "^NIC[0-9]+$", "name": "MCX75310"}, ("NIC9", "NIC9 System Slot10 AOC-STGS-i2T"), False),
        ({"id": "^NIC[0-9]+$", "name": "MCX75310"}, ("GPU1", "MCX75310"), False),
        ({"name": "MCX75310"}, ("X", "MCX75310AAS"), True),
    ],
)
def test_match_rules(rule: object, member: tuple[str, str], expected: bool) -> None:
    assert Match.model_validate(rule).matches(*member) is expected


def _edit(path: Path, change) -> Path:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _comp(data: dict, name: str) -> dict:
    return next(c for c in data["components"] if c["component"] == name)


BAD = [
    (lambda d: _comp(d, "bios").update(version="two point one"), r"components\.bios\.version: .*not a version"),
    (lambda d: _comp(d, "bios").update(version_scheme="semver"), r"components\.bios\.version_scheme: .*'dotted'"),
    (lambda d: _comp(d, "bios").update(version_scheme="hex-dotted"),
     r"components\.bios: .*'2\.1' is not a hex-dotted version"),
    (lambda d: _comp(d, "gpu").update(sha256="ABC"), r"components\.gpu\.sha256: sha256 must be 64"),
    (lambda d: _comp(d, "gpu").update(colour="red"), r"components\.gpu\.colour: unknown key"),
    (lambda d: _comp(d, "gpu").update(apply_time="Later"), r"components\.gpu\.apply_time"),
    (lambda d: _comp(d, "gpu").update(after=["cpld"]), r"after names unknown component\(s\) \['cpld'\]"),
    (lambda d: _comp(d, "bmc").update(after=["ib_nic"]) or _comp(d, "ib_nic").update(after=["bmc"]),
     r"cycle"),
    (lambda d: d["components"].append(dict(_comp(d, "bmc"))), r"listed twice: \['bmc'\]"),
    (lambda d: _comp(d, "gpu").update(match={"supermicro": {"id": "(["}}), r"components\.gpu\.match\.supermicro"),
    (lambda d: _comp(d, "gpu").update(match={"supermicro": {}}), r"give an id, name or either pattern"),
    # every image says what it is for: refused when the file loads, one line naming the file and the key
    (lambda d: _comp(d, "gpu").pop("applies_to"), r"components\.gpu\.applies_to: missing: say which platforms"),
    (lambda d: _comp(d, "gpu").update(applies_to={}), r"components\.gpu\.applies_to: applies_to needs platforms"),
    (lambda d: _comp(d, "gpu").update(applies_to="some"), r"components\.gpu\.applies_to"),
    (lambda d: _comp(d, "gpu")["applies_to"].update(platforms=[{"manufacturer": "Supermicro"}]),
     r"components\.gpu\.applies_to\.platforms\.0: a platform needs a model or a sku"),
    (lambda d: _comp(d, "gpu")["applies_to"].update(platforms=[{"manufacturer": "Supermicro", "model": "SYS-[82"}]),
     r"components\.gpu\.applies_to\.platforms\.0\.model: pattern 'SYS-\[82': '\[' is never closed"),
    (lambda d: _comp(d, "gpu")["applies_to"].update(platforms=[{"manufacturer": "", "model": "X"}]),
     r"components\.gpu\.applies_to\.platforms\.0\.manufacturer: empty pattern"),
    (lambda d: _comp(d, "gpu")["applies_to"].update(platforms=[{"manufacturer": "S", "model": "X", "kind": "Y"}]),
     r"components\.gpu\.applies_to\.platforms\.0\.kind: unknown key"),
    (lambda d: _comp(d, "gpu")["applies_to"].pop("entries"), r"components\.gpu: applies_to\.entries: name the"),
    (lambda d: _comp(d, "gpu")["applies_to"].update(entries=[{"software_id": "0x0020"}]),
     r"components\.gpu\.applies_to\.entries\.0\.id: Field required"),
    (lambda d: d.update(name="bad name!"), r"name: String should match"),
    (lambda d: d.pop("components"), r"components: Field required"),
    (lambda d: d.update(components=[]), r"components: .*at least 1"),
    (lambda d: d["policy"]["waves"].update(canary="x"), r"policy\.waves\.canary: .*percentage"),
    (lambda d: d["policy"]["waves"].update(batch_size=3), r"policy\.waves: .*not both"),
    (lambda d: d["policy"]["halt"].update(max_fail_percentage=120), r"policy\.halt\.max_fail_percentage"),
    (lambda d: d["policy"].update(window={"start": "22:00", "end": "06:00", "timezone": "Nowhere/X"}),
     r"policy\.window\.timezone: unknown time zone"),
    (lambda d: d["policy"].update(concurrency=0), r"policy\.concurrency"),
    (lambda d: d.update(extra=1), r"extra: unknown key"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_bad_catalogs(example_dir: Path, change, message: str) -> None:
    path = _edit(example_dir, change)
    with pytest.raises(InputError, match=message) as info:
        load_catalog(path)
    line = str(info.value)
    assert line.startswith(str(path)) and "\n" not in line


def test_missing_image(example_dir: Path) -> None:
    (example_dir.parent.parent / "firmware" / "cx7_ndr_28.39.1002.bin").unlink()
    with pytest.raises(InputError, match=r"components\.ib_nic\.image: file .*cx7_ndr_28\.39\.1002\.bin does not"):
        load_catalog(example_dir)


def test_image_checksum_mismatch(example_dir: Path) -> None:
    (example_dir.parent.parent / "firmware" / "smc_x13_bmc_11.02.05.bin").write_text("tampered\n")
    with pytest.raises(InputError, match=r"components\.bmc\.image: sha256 of .* is [0-9a-f]{64}, the catalog"):
        load_catalog(example_dir)


@pytest.mark.parametrize("url", ["https://repo.example/gpu.bin", "http://10.0.0.5:8080/fw/gpu.bin"])
def test_url_images_are_not_fetched(example_dir: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """A URL image is the BMC's to fetch (its integrity is its own signature): loading the catalog opens no
    connection and reads no file for it, while every local image is still read and checked."""
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"the catalog loader opened a connection: {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    digested: list[str] = []
    real_digest = catalog_module.file_digest
    monkeypatch.setattr(catalog_module, "file_digest",
                        lambda path, where="": digested.append(Path(path).name) or real_digest(path, where))
    path = _edit(example_dir, lambda d: _comp(d, "gpu").update(image=url))
    cat = load_catalog(path)
    gpu = cat.component("gpu")
    assert gpu.is_url and gpu.image == url
    assert sorted(digested) == sorted(Path(c.image).name for c in cat.components if c.component != "gpu")
    (example_dir.parent.parent / "firmware" / "smc_x13_bmc_11.02.05.bin").write_text("tampered\n")
    with pytest.raises(InputError, match=r"components\.bmc\.image: sha256 of"):  # the local ones still checked
        load_catalog(path)


@pytest.mark.parametrize("image", ["ftp://repo.example/gpu.bin", "repo.example/https://gpu.bin"])
def test_only_http_and_https_are_urls(example_dir: Path, image: str) -> None:
    """Anything else is a local path, checked as one (here: it does not exist)."""
    path = _edit(example_dir, lambda d: _comp(d, "gpu").update(image=image))
    with pytest.raises(InputError, match=r"components\.gpu\.image: file .* does not exist"):
        load_catalog(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [("name: [unclosed\n", "YAML error"), ("- a\n- b\n", "must be a mapping"), ("", "empty"),
     ("name: a\nname: b\n", "duplicate key")],
)
def test_unreadable_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.yml"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load_catalog(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="campaign file does not exist"):
        load_catalog(tmp_path / "nope.yml")
