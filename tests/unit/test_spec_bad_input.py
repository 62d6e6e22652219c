"""Bad inventories and specs: one clear line naming file, host and key; exit 2; no traceback."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from provision.cli import main

PROFILE = "group_vars/all/profile_ml_prod_v4.yml"
WORKSTATION = "group_vars/all/profile_catalogue_i5_13500_ws.yml"


def _edit(rel: str, old: str, new: str, count: int = 1) -> Callable[[Path], None]:
    def apply(inv: Path) -> None:
        path = inv / rel
        text = path.read_text()
        assert old in text, f"fixture drift: {old!r} not in {rel}"
        path.write_text(text.replace(old, new, count))

    return apply


def _write(rel: str, text: str) -> Callable[[Path], None]:
    def apply(inv: Path) -> None:
        (inv / rel).parent.mkdir(parents=True, exist_ok=True)
        (inv / rel).write_text(text)

    return apply


def _remove(rel: str) -> Callable[[Path], None]:
    return lambda inv: (inv / rel).unlink()


# (id, mutation, regexes the single error line must match)
CASES: list[tuple[str, Callable[[Path], None], list[str]]] = [
    ("yaml-syntax", _edit(PROFILE, "  cpu:\n", "  cpu: [\n"), [PROFILE, r"line \d+", "YAML error"]),
    ("yaml-tab-indent", _edit("hosts.yml", "            node01:", "\t  node01:"), ["hosts.yml", "YAML error"]),
    ("empty-hosts", _write("hosts.yml", ""), ["hosts.yml", "empty"]),
    ("empty-group-vars", _write("group_vars/ml_prod_v4.yml", "---\n"), ["ml_prod_v4.yml", "empty"]),
    ("unknown-key", _edit(PROFILE, "    sockets: 2\n", "    sockets: 2\n    sokets: 2\n"),
     [PROFILE, "node01", r"cpu\.sokets", "unknown key"]),
    ("unknown-top-key", _edit(PROFILE, "  form_factor:", "  colour: red\n  form_factor:"),
     [PROFILE, r"colour", "unknown key"]),
    ("wrong-type", _edit(PROFILE, "    count: 8\n    memory_gb: 80", "    count: eight\n    memory_gb: 80"),
     [PROFILE, "node01", r"gpu\.count", "integer", "eight"]),
    ("zero-count", _edit(PROFILE, "    count: 8\n    memory_gb: 80", "    count: 0\n    memory_gb: 80"),
     [PROFILE, r"gpu\.count", "greater than 0"]),
    ("negative-count", _edit(PROFILE, "    sockets: 2", "    sockets: -2"), [PROFILE, r"cpu\.sockets", "greater than 0"]),
    ("ambient-fail-below-warn", _edit(PROFILE, "    fail_internal_ambient_c: 40\n", "    fail_internal_ambient_c: 30\n"),
     [PROFILE, "node01", r"cooling: fail_internal_ambient_c 30 must be above warn_internal_ambient_c 35"]),
    ("ambient-fail-above-components", _edit(PROFILE, "    fail_internal_ambient_c: 40\n",
                                            "    fail_internal_ambient_c: 95\n"),
     [PROFILE, r"cooling: fail_internal_ambient_c 95 must not be above critical_component_c 90"]),
    ("ambient-fail-not-a-number", _edit(PROFILE, "    fail_internal_ambient_c: 40\n", "    fail_internal_ambient_c: hot\n"),
     [PROFILE, r"cooling\.fail_internal_ambient_c", "hot"]),
    ("unknown-profile", _edit("group_vars/ml_prod_v4.yml", "ml_prod_v4", "ml_prod_v9"),
     ["node01", "provision_profile", "unknown profile 'ml_prod_v9'"]),
    ("no-profile", _write("group_vars/ml_prod_v4.yml", "---\nsomething: 1\n"), ["node01", "provision_profile is not set"]),
    ("no-bmc-address", _write("host_vars/node03.yml", "---\nansible_host: node03.example.net\n"),
     ["node03", "provision_bmc_address is not set"]),
    ("bad-bmc-address", _write("host_vars/node03.yml", "---\nprovision_bmc_address: bmc-node03\n"),
     ["node03", r"provision_bmc\.address"]),
    ("duplicate-host", _edit("hosts.yml", "            node02:\n", "            node02:\n            node02:\n"),
     ["hosts.yml", "duplicate key 'node02'"]),
    ("duplicate-bmc", _write("host_vars/node02.yml", "---\nprovision_bmc_address: https://bmc-node01.oob.example.net\n"),
     ["node01 and node02", "share BMC address"]),
    ("unknown-version-scheme", _edit(PROFILE, "      version: 11.02.05\n", "      version: 11.02.05\n      version_scheme: semver\n"),
     [PROFILE, r"firmware\.0\.version_scheme", "semver", "dotted"]),
    ("version-not-in-scheme", _edit(PROFILE, "      version: 11.02.05\n", "      version: 11.02.05\n      version_scheme: date\n"),
     [PROFILE, r"firmware\.0", "'11.02.05' is not a date version"]),
    ("bad-driver-version", _edit(PROFILE, "      version: 550.127.08\n      apt_version: 550.127.08-1\n      kernel",
                                 "      version: latest\n      apt_version: 550.127.08-1\n      kernel"),
     [PROFILE, r"software\.nvidia_driver\.version", "not a version"]),
    ("bad-apt-version", _edit(PROFILE, "apt_version: 2.21.5-1+cuda12.4", "apt_version: 'two point one'"),
     [PROFILE, r"software\.nccl\.apt_version", "not a Debian package version"]),
    ("bad-firmware-version", _edit(PROFILE, "version: 11.02.05", "version: v11 beta"),
     [PROFILE, r"firmware\.0\.version", "not a version"]),
    ("scratch-layout-contradicts-drives", _edit(PROFILE, "        vdevs: 8", "        vdevs: 6"),
     [PROFILE, r"storage\.scratch", "stripe has 6 vdevs but the scratch set has 8 drives"]),
    ("scrub-bad-calendar", _edit(PROFILE, "scrub: {on_calendar: monthly}", "scrub: {on_calendar: every full moon}"),
     [PROFILE, "node01", r"storage\.scratch\.zfs\.scrub\.on_calendar", "not a systemd OnCalendar expression"]),
    ("scrub-calendar-without-age", _edit(PROFILE, "scrub: {on_calendar: monthly}",
                                         "scrub: {on_calendar: 'Sun *-*-01..07 03:00:00'}"),
     [PROFILE, r"storage\.scratch\.zfs\.scrub", "set max_age_days"]),
    ("snapshots-keep-nothing", _edit(PROFILE, "{hourly: 24, daily: 7, weekly: 4, monthly: 0}",
                                     "{hourly: 0, daily: 0, weekly: 0, monthly: 0}"),
     [PROFILE, r"storage\.scratch\.zfs\.snapshots", "nothing would be snapshotted"]),
    ("snapshots-negative", _edit(PROFILE, "{hourly: 24, daily: 7,", "{hourly: -1, daily: 7,"),
     [PROFILE, r"storage\.scratch\.zfs\.snapshots\.hourly", "greater than or equal to 0"]),
    ("snapshots-bad-dataset", _edit(PROFILE, "weekly: 4, monthly: 0}", "weekly: 4, monthly: 0, datasets: ['/ckpt']}"),
     [PROFILE, r"storage\.scratch\.zfs\.snapshots\.datasets", "not a dataset name"]),
    ("zed-bad-email", _edit(PROFILE, "email: storage-alerts@example.net", "email: storage-alerts"),
     [PROFILE, r"storage\.scratch\.zfs\.zed\.email", "not an e-mail address"]),
    ("zed-nobody", _edit(PROFILE, "zed: {email: storage-alerts@example.net, notify_verbose: false}",
                         "zed: {notify_verbose: true}"),
     [PROFILE, r"storage\.scratch\.zfs\.zed", "needs an email or a hook"]),
    ("memory-does-not-add-up", _edit(PROFILE, "    dimm_count: 32", "    dimm_count: 16"),
     [PROFILE, r"memory", "total_gb 2048"]),
    ("bad-sha256", _edit(PROFILE, "sha256: 2f23820a", "sha256: XYZ3820a"),
     [PROFILE, r"firmware\.0\.sha256", "64 lowercase hex"]),
    ("short-sha256", _edit(PROFILE, "2f23820ae740a7896344288de83ed94c261d364ee22ff7a4fb62afdef6076e2d", "2f23"),
     [PROFILE, r"firmware\.0\.sha256"]),
    ("missing-image", _edit(PROFILE, "../firmware/smc_x13_bmc_11.02.05.bin", "../firmware/nope.bin"),
     ["node01", r"firmware\.bmc\.image", "nope.bin does not exist"]),
    ("missing-ca-file", _write("host_vars/node04.yml",
                               "---\nprovision_bmc_address: https://b4.example.net\nprovision_bmc_ca_file: /nonexistent/ca.pem\n"),
     ["node04", "provision_bmc_ca_file", "does not exist"]),
    ("missing-installer-ca-file", _write("host_vars/node04.yml",
                                         "---\nprovision_bmc_address: https://b4.example.net\n"
                                         "provision_os_installer_ca_file: /nonexistent/site-ca.pem\n"),
     ["node04", "provision_os_installer_ca_file: /nonexistent/site-ca.pem does not exist"]),
    ("fabric-manager-mismatch", _edit(PROFILE, "    fabric_manager:\n      version: 550.127.08",
                                      "    fabric_manager:\n      version: 550.90.07"),
     [PROFILE, "fabric_manager 550.90.07 must equal nvidia_driver 550.127.08"]),
    ("driver-off-branch", _edit(PROFILE, 'branch: "550"', 'branch: "535"'), [PROFILE, "not on branch 535"]),
    ("missing-section", _edit(PROFILE, "  acceptance:\n", "  acceptanse:\n"), [PROFILE, "acceptance", "Field required"]),
    ("unknown-bios-key", _edit(PROFILE, "      sriov: enabled", "      sriovv: enabled"),
     [PROFILE, r"bios\.settings", "unknown BIOS key"]),
    ("bad-enum", _edit(PROFILE, "    type: DDR5", "    type: DDR6"), [PROFILE, r"memory\.type", "DDR6"]),
    ("boot-raid1-needs-two", _edit(PROFILE, "    boot:\n      count: 2", "    boot:\n      count: 3"),
     [PROFILE, "raid1 boot needs exactly 2 drives"]),
    ("profile-not-mapping", _write("group_vars/all/profile_ml_prod_v4.yml", "---\nprovision_profile_ml_prod_v4: 7\n"),
     ["provision_profile_ml_prod_v4", "must be a mapping"]),
    ("waivers-without-lab", _write("host_vars/node03.yml", "---\nprovision_bmc_address: https://b3.example.net\n"
                                   "provision_lab_waivers:\n  kernel.uname: twin\n"),
     ["node03", "provision_lab_waivers is set but provision_lab is not true"]),
    ("lab-not-bool", _write("host_vars/node03.yml", "---\nprovision_bmc_address: https://b3.example.net\n"
                            "provision_lab: sometimes\n"),
     ["node03", "provision_lab: must be true or false", "sometimes"]),
    ("waiver-without-reason", _write("host_vars/node03.yml", "---\nprovision_bmc_address: https://b3.example.net\n"
                                     "provision_lab: true\nprovision_lab_waivers:\n  kernel.uname: ''\n"),
     ["node03", r"provision_lab_waivers\.kernel\.uname: needs a reason"]),
    ("waiver-bad-pattern", _write("host_vars/node03.yml", "---\nprovision_bmc_address: https://b3.example.net\n"
                                  "provision_lab: true\nprovision_lab_waivers:\n  'gpu.0 model': x\n"),
     ["node03", "provision_lab_waivers", "not a check id or pattern"]),
    *[(f"bmc-deadline-{name}", _write("host_vars/node03.yml", "---\nprovision_bmc_address: https://b3.example.net\n"
                                      f"provision_bmc_deadline_s: {value}\n"),
       ["hosts.yml", "node03", "provision_bmc_deadline_s: must be a positive number of seconds"])
      for name, value in (("zero", "0"), ("negative", "-5"), ("word", "soon"), ("bool", "true"), ("inf", ".inf"))],
    ("gpu-without-driver-pin", _edit(WORKSTATION, '    nvidia_driver:\n      branch: "550"\n      version: 550.127.08\n'
                                     '      apt_version: 550.127.08-1\n      kernel_modules: open\n', ""),
     [WORKSTATION, "provision_profile_catalogue_i5_13500_ws", "gpu is present, so software needs nvidia_driver"]),
    ("gpu-null-pin", _edit(WORKSTATION, "    dcgm:\n      version: 3.3.9\n      apt_version: 1:3.3.9\n", "    dcgm: null\n"),
     [WORKSTATION, "gpu is present, so software needs dcgm pinned"]),
    ("catalogue-bad-threads", _edit(WORKSTATION, "    threads: 20", "    threads: twenty"),
     [WORKSTATION, r"cpu\.threads", "integer"]),
    ("duplicate-spec-key", _edit(PROFILE, "    sockets: 2\n", "    sockets: 2\n    sockets: 3\n"),
     [PROFILE, "duplicate key 'sockets'"]),
    ("rack-unknown", _edit("host_vars/node03.yml", "provision_rack: r01", "provision_rack: r09"),
     ["node03", "provision_rack: rack 'r09' has no entry in provision_racks", r"known: r01, r02"]),
    ("rack-not-a-name", _edit("host_vars/node03.yml", "provision_rack: r01", "provision_rack: [r01]"),
     ["node03", "provision_rack: must be a rack name"]),
    ("rack-budget-not-a-number", _edit("group_vars/all/main.yml", "power_budget_w: 25000", "power_budget_w: lots"),
     [r"provision_racks\.r01\.power_budget_w", "integer", "lots"]),
    ("rack-budget-zero", _edit("group_vars/all/main.yml", "power_budget_w: 25000", "power_budget_w: 0"),
     [r"provision_racks\.r01\.power_budget_w", "greater than 0"]),
    ("rack-unknown-key", _edit("group_vars/all/main.yml", "    power_budget_w: 25000\n",
                               "    power_budget_w: 25000\n    cooling_kw: 25\n"),
     [r"provision_racks\.r01\.cooling_kw", "unknown key"]),
    ("racks-not-a-mapping", _edit("group_vars/all/main.yml", "provision_racks:\n  r01:\n    power_budget_w: 25000\n"
                                  "  r02:\n    power_budget_w: 25000\n", "provision_racks: 5\n"),
     ["provision_racks: must be a mapping"]),
    ("container-engine-unknown", _edit(PROFILE, "    engines: [docker, apptainer]", "    engines: [docker, podman]"),
     [PROFILE, "node01", r"containers\.engines\.1", "podman"]),
    ("container-engines-conflict", _edit(PROFILE, "    engines: [docker, apptainer]",
                                         "    engines: [docker, containerd, apptainer]"),
     [PROFILE, r"containers", "containerd and docker exclude each other"]),
    ("apptainer-without-source", _edit(PROFILE, "    apptainer:\n      release_deb:", "    apptainer:\n      release_de:"),
     [PROFILE, r"containers\.apptainer", "release_de"]),
    ("apptainer-bad-sha", _edit(PROFILE, "sha256: 2723b292", "sha256: 2723B292"),
     [PROFILE, r"containers\.apptainer\.release_deb\.sha256", "64 lowercase hex"]),
    ("docker-repo-no-components", _edit(PROFILE, "    engines: [docker, apptainer]\n",
                                        "    engines: [docker, apptainer]\n    docker:\n      repository:\n"
                                        "        uri: https://mirror.example.net/docker\n        suite: bookworm\n"),
     [PROFILE, r"containers\.docker\.repository", "needs components"]),
    ("docker-repo-bad-url", _edit(PROFILE, "    engines: [docker, apptainer]\n",
                                  "    engines: [docker, apptainer]\n    docker:\n      repository:\n"
                                  "        uri: mirror/docker\n        suite: bookworm\n        components: [stable]\n"),
     [PROFILE, r"containers\.docker\.repository\.uri", "not an http"]),
    ("test-image-bad", _edit(PROFILE, "      docker: nvidia/cuda:12.4.1-base-ubuntu22.04", "      docker: 'NVIDIA CUDA'"),
     [PROFILE, r"containers\.test_image\.docker", "not an image reference"]),
    ("test-sif-relative", _edit(PROFILE, "      apptainer: /var/lib/provision/images/cuda-12.4.1-base.sif",
                                "      apptainer: cuda.sif"),
     [PROFILE, r"containers\.test_image\.apptainer", "not an absolute path"]),
    ("nfs-bad-vers", _edit(PROFILE, "  form_factor:", "  nfs_mounts:\n    - {name: ckpt, server: 10.0.0.5, export: /x, "
                                                 "mountpoint: /mnt/c, options: 'vers=5,hard'}\n  form_factor:"),
     [PROFILE, "node01", r"nfs_mounts\.0\.options", "vers=5", "bad value"]),
    # a profile names the platforms it describes, and every image the platforms (and entries) it is for
    ("no-platforms", _edit(PROFILE, "  platforms:\n    - {manufacturer: Supermicro, model: SYS-821GE-TNHR}\n", ""),
     [PROFILE, "node01", r"ml_prod_v4\.platforms: missing: name the platforms"]),
    ("platform-bad-glob", _edit(PROFILE, "    - {manufacturer: Supermicro, model: SYS-821GE-TNHR}\n  form_factor",
                                "    - {manufacturer: Supermicro, model: 'SYS-[821GE'}\n  form_factor"),
     [PROFILE, r"platforms\.patterns\.0\.model", "never closed"]),
    ("platform-without-model", _edit(PROFILE, "    - {manufacturer: Supermicro, model: SYS-821GE-TNHR}\n  form_factor",
                                     "    - {manufacturer: Supermicro}\n  form_factor"),
     [PROFILE, r"platforms\.patterns\.0", "needs a model or a sku"]),
    ("image-without-applies-to", _edit(PROFILE, "      order: 10\n      applies_to:\n", "      order: 10\n      x_applies_to:\n"),
     [PROFILE, r"firmware\.0\.(applies_to|x_applies_to)"]),
    ("image-applies-to-missing", _edit(
        PROFILE, "      applies_to:\n        platforms: [{manufacturer: Supermicro, model: SYS-821GE-TNHR}]\n"
        "        entries: [{id: BMC, manufacturer: Supermicro, related_item: \"/redfish/v1/Managers/*\"}]\n", ""),
     [PROFILE, r"firmware\.0\.applies_to: missing: say which platforms the image is for"]),
    ("image-bad-entry-glob", _edit(PROFILE, "entries: [{id: BMC,", "entries: [{id: 'BMC[',"),
     [PROFILE, r"firmware\.0\.applies_to\.entries\.0\.id", "never closed"]),
    ("nfs-soft-unacknowledged", _edit(PROFILE, "  form_factor:", "  nfs_mounts:\n    - {name: ckpt, server: nfs1, "
                                                            "export: /x, mountpoint: /mnt/c, options: soft}\n  form_factor:"),
     [PROFILE, "node01", r"nfs_mounts\.0", "soft mounts can cut checkpoints short"]),
]


@pytest.mark.parametrize("mutate,patterns", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_line(
    inventory_copy: Path, capsys: pytest.CaptureFixture[str], mutate: Callable[[Path], None], patterns: list[str]
) -> None:
    mutate(inventory_copy.parent)
    rc = main(["spec", "validate", "-i", str(inventory_copy)])
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    for pattern in patterns:
        assert re.search(pattern, err), f"{pattern!r} not in {err!r}"


def test_missing_inventory_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["inventory", "list", "-i", str(tmp_path / "nope.yml")]) == 2
    assert "nope.yml: inventory path does not exist" in capsys.readouterr().err


def test_unknown_host_is_usage_error(capsys: pytest.CaptureFixture[str], inventory_copy: Path) -> None:
    assert main(["spec", "show", "node42", "-i", str(inventory_copy)]) == 2
    assert "host pattern 'node42': 'node42' matches no host" in capsys.readouterr().err


def test_unknown_option_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "validate", "--frobnicate"]) == 2


def test_the_bmc_deadline_is_read_from_the_inventory(inventory_copy: Path) -> None:
    from provision.redfish.ops.session import options_for
    from provision.spec import load_fleet

    hv = inventory_copy.parent / "host_vars" / "node03.yml"
    hv.write_text("---\nprovision_bmc_address: https://b3.example.net\nprovision_bmc_deadline_s: '300'\n"
                  "provision_bmc_username: u\nprovision_bmc_password: p\n")
    hosts = load_fleet(inventory_copy).hosts
    assert hosts["node03"].bmc.deadline_s == 300.0 and hosts["node02"].bmc.deadline_s == 120.0
    assert options_for("node03", hosts["node03"].bmc).deadline_s == 300.0  # where the connector's deadline is set
