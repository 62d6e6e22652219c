"""Host patterns: table tests, and differential tests against Ansible's own InventoryManager (same inventory)
and Slurm's `scontrol show hostnames` (when installed) for what the project adds."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from provision.errors import InputError
from provision.spec.patterns import HostPatterns, slurm_expand, split_terms

# A hierarchy with nested groups, a host in several groups, hosts in no group, and a group whose hosts are
# listed out of name order (Ansible's order, and so its subscripts, follow the inventory).
INVENTORY = """\
all:
  hosts:
    mgmt01:
  children:
    gpu:
      children:
        h100:
          hosts:
            node01:
            node02:
            node03:
            node04:
        gh200:
          hosts:
            node06:
            node05:
    cpu:
      hosts:
        login01:
        login02:
    rack1:
      hosts:
        node01:
        node02:
        login01:
    rack2:
      hosts:
        node03:
        node04:
        node05:
        node06:
        login02:
    web:
      hosts:
        web1:
        web2:
        web10:
"""
ALL = ["mgmt01", "login01", "login02", "node01", "node02", "node03", "node04", "node05", "node06", "web1",
       "web2", "web10"]


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("patterns") / "hosts.yml"
    path.write_text(INVENTORY)
    return path


@pytest.fixture(scope="module")
def resolver(inventory: Path) -> HostPatterns:
    return HostPatterns.from_inventory(inventory)


def ansible_hosts(inventory: Path, pattern: str, limit: str | None = None) -> list[str]:
    """What Ansible itself selects (a fresh InventoryManager on the same file, as ansible-playbook -l)."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    manager = InventoryManager(loader=DataLoader(), sources=[str(inventory)])
    manager.subset(limit)
    return [h.name for h in manager.get_hosts(pattern)]


# Ansible's own pattern language: every term here matches something, so Ansible and provision must agree
# exactly, order included (the table lists the hosts; Ansible's order is its own).
ANSIBLE_CASES = [
    ("all", ALL),
    ("*", ALL),
    ("node01", ["node01"]),
    ("gpu", ["node01", "node02", "node03", "node04", "node06", "node05"]),
    ("gh200", ["node06", "node05"]),
    ("node01,node03", ["node01", "node03"]),
    ("node03,node01", ["node03", "node01"]),
    ("node01:node03", ["node01", "node03"]),
    ("h100,gh200", ["node01", "node02", "node03", "node04", "node06", "node05"]),
    ("gpu,!node03", ["node01", "node02", "node04", "node06", "node05"]),
    ("gpu:!node03", ["node01", "node02", "node04", "node06", "node05"]),
    ("!node03,gpu", ["node01", "node02", "node04", "node06", "node05"]),  # ! applies last, as in Ansible
    ("gpu,&rack1", ["node01", "node02"]),
    ("rack2:&gpu:!gh200", ["node03", "node04"]),
    ("!gpu", ["mgmt01", "login01", "login02", "web1", "web2", "web10"]),  # only ! : from all
    ("&rack1", ["node01", "node02", "login01"]),
    ("node0*", ["node01", "node02", "node03", "node04", "node06", "node05"]),
    ("node0?", ["node01", "node02", "node03", "node04", "node06", "node05"]),
    ("web?", ["web1", "web2"]),
    ("*01", ["mgmt01", "node01", "login01"]),
    ("~node0[12]", ["node01", "node02"]),
    ("~web\\d$", ["web1", "web2"]),
    ("~(login|mgmt)", ["mgmt01", "login01", "login02"]),
    ("gpu[0]", ["node01"]),
    ("gpu[-1]", ["node05"]),
    ("gh200[0]", ["node06"]),  # positions follow the inventory, not the names
    ("gpu[1:3]", ["node02", "node03", "node04"]),
    ("gpu[4:]", ["node06", "node05"]),
    ("rack2[0:1],cpu", ["node03", "node04", "login01", "login02"]),
    ("g*", ["node01", "node02", "node03", "node04", "node06", "node05"]),  # a glob over group names
    ("rack*,&cpu", ["login01", "login02"]),
    ("ungrouped", ["mgmt01"]),
    ("node0[1:6:2]", ["node01", "node02", "node06"]),  # not a [x:y] subscript: Ansible's glob class {1,:,6,2}
    (" node01 , node02 ", ["node01", "node02"]),
]


@pytest.mark.parametrize(("pattern", "expected"), ANSIBLE_CASES, ids=[c[0] for c in ANSIBLE_CASES])
def test_ansible_patterns_match_ansible(inventory: Path, resolver: HostPatterns, pattern: str,
                                        expected: list[str]) -> None:
    ansible = ansible_hosts(inventory, pattern)
    assert sorted(ansible) == sorted(expected)  # the table itself is Ansible's behaviour
    assert resolver.select(pattern) == ansible


@pytest.mark.parametrize(("pattern", "limit"), [
    ("all", "gpu"), ("gpu", "rack1"), ("gpu", "!node03"), ("all", "rack2:&gpu"), ("gpu", "node0*,!gh200"),
    ("rack2", "~node0[45]"), ("all", "gpu[1:2]"),
])
def test_limit_matches_ansible_subset(inventory: Path, resolver: HostPatterns, pattern: str, limit: str) -> None:
    expected = ansible_hosts(inventory, pattern, limit)
    assert expected, "a differential case must select something"
    assert resolver.select(pattern, limit) == expected


def test_limit_file_as_ansible(inventory: Path, resolver: HostPatterns, tmp_path: Path) -> None:
    names = tmp_path / "retry"
    names.write_text("node04\nnode01\n\n")
    assert resolver.select("gpu", f"@{names}") == ansible_hosts(inventory, "gpu", f"@{names}") == ["node01", "node04"]


def test_in_memory_inventory_agrees_with_ansible(inventory: Path, resolver: HostPatterns) -> None:
    """A Fleet not read by load_fleet resolves over its hosts' groups: the same hosts as the real inventory
    (in the fleet's order; so subscripts, which count positions in a group, are left out here)."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    manager = InventoryManager(loader=DataLoader(), sources=[str(inventory)])
    groups = {h.name: [g.name for g in h.get_groups() if g.name not in ("all", "ungrouped")]
              for h in manager.get_hosts()}
    flat = HostPatterns.from_groups(groups, "test")
    for pattern, expected in ANSIBLE_CASES:
        if "[" not in pattern or pattern.startswith("~"):
            assert sorted(flat.select(pattern)) == sorted(expected), pattern


# What provision adds where Ansible alone would select nothing (Ansible ignores the term with a warning).
EXTENDED_CASES = [
    ("node0[1:4]", ["node01", "node02", "node03", "node04"]),  # host range: no host or group "node0"
    ("node[01:03]", ["node01", "node02", "node03"]),
    ("node0[1:4],!node03", ["node01", "node02", "node04"]),
    ("gpu,!node0[2:3]", ["node01", "node04", "node06", "node05"]),
    ("node[01-04]", ["node01", "node02", "node03", "node04"]),  # Slurm hostlist
    ("node[01-03,06]", ["node01", "node02", "node03", "node06"]),
    ("node[05-06],login[01-02]", ["node05", "node06", "login01", "login02"]),
    ("node0[1-6],&rack1", ["node01", "node02"]),
    ("web[1-2,10]", ["web1", "web2", "web10"]),
    ("gpu,!node[01-04]", ["node06", "node05"]),
    ("rack[1-2],&cpu", ["login01", "login02"]),  # each name of a range is a pattern: here groups
]


@pytest.mark.parametrize(("pattern", "expected"), EXTENDED_CASES, ids=[c[0] for c in EXTENDED_CASES])
def test_ranges(inventory: Path, resolver: HostPatterns, pattern: str, expected: list[str]) -> None:
    assert resolver.select(pattern) == expected


def test_a_subscript_of_a_group_stays_ansibles(resolver: HostPatterns) -> None:
    """`gpu[1:2]` is the 2nd and 3rd host of gpu (Ansible), never hosts named gpu1, gpu2."""
    assert resolver.select("gpu[1:2]") == ["node02", "node03"]
    assert resolver.select("rack[1:2]") == ["node01", "node02", "login01", "node03", "node04", "node05", "node06",
                                           "login02"]  # no group rack: the host range rack1, rack2 (groups)


def test_list_of_patterns_is_a_comma_list(resolver: HostPatterns) -> None:
    assert resolver.select(["node0[1:2]", "gh200", "!node05"]) == resolver.select("node0[1:2],gh200,!node05")
    assert resolver.select(["node0[1:2]", "gh200", "!node05"]) == ["node01", "node02", "node06"]


BAD_CASES = [
    ("node99", "host pattern 'node99': 'node99' matches no host; known: mgmt01, login01"),
    ("gpu,nodeX", "'nodeX' matches no host"),
    ("gpu,!node3", "'node3' matches no host"),  # a mistyped exclusion never silently excludes nothing
    ("gpu,&gpux", "'gpux' matches no host"),
    ("gpu,&cpu", "host pattern 'gpu,&cpu' matches no host"),
    ("gpu:!gpu", "host pattern 'gpu:!gpu' matches no host"),
    ("node[01-08]", "'node[01-08]' names node07, node08, not in the inventory"),
    ("node0[1:9]", "'node0[1:9]' names node07, node08, node09, not in the inventory"),
    ("node[01-99]", "names node07, node08, node09, node10, node11 (and 88 more), not in the inventory"),
    ("node[3-1]", "host pattern 'node[3-1]': range 3-1 runs backwards"),
    ("gpu[9]", "No hosts matched the subscripted pattern 'gpu[9]'"),
    ("node0[12]", "'node0[12]' matches no host"),
    ("localhost", "'localhost' matches no host"),  # never Ansible's implicit localhost
    ("~(", "host pattern '~('"),
    ("", "empty host pattern"),
    (",", "empty host pattern"),
]


@pytest.mark.parametrize(("pattern", "message"), BAD_CASES, ids=[c[0] or "empty" for c in BAD_CASES])
def test_bad_patterns_are_one_line_exit_2(resolver: HostPatterns, pattern: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        resolver.select(pattern)
    text = str(info.value)
    assert message in text and len(text.splitlines()) == 1, text
    assert info.value.exit_code == 2


def test_limit_errors(resolver: HostPatterns, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"--limit 'cpu' leaves no host of 'gpu'"):
        resolver.select("gpu", "cpu")
    with pytest.raises(InputError, match=r"--limit 'node9': 'node9' matches no host"):
        resolver.select("gpu", "node9")
    with pytest.raises(InputError, match=r"--limit @.*nope: .*nope is not a file"):
        resolver.select("gpu", f"@{tmp_path / 'nope'}")


SLURM_CASES = [
    ("node[01-03,07]", ["node01", "node02", "node03", "node07"]),
    ("node[8-10]", ["node8", "node9", "node10"]),
    ("node[008-10]", ["node008", "node009", "node010"]),
    ("node[01-3]", ["node01", "node02", "node03"]),
    ("x[09-11]", ["x09", "x10", "x11"]),
    ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
    ("node[3,1]", ["node3", "node1"]),  # as typed, as scontrol does
]


@pytest.mark.parametrize(("hostlist", "expected"), SLURM_CASES, ids=[c[0] for c in SLURM_CASES])
def test_slurm_expansion(hostlist: str, expected: list[str]) -> None:
    assert slurm_expand(hostlist) == expected


@pytest.mark.skipif(shutil.which("scontrol") is None, reason="Slurm's scontrol is not installed")
def test_slurm_expansion_matches_scontrol(tmp_path: Path) -> None:
    """The same hostlists through Slurm itself (`scontrol show hostnames` needs only a slurm.conf)."""
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\nSlurmctldHost=localhost\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n")
    env = dict(os.environ, SLURM_CONF=str(conf))
    for hostlist, expected in SLURM_CASES:
        out = subprocess.run(["scontrol", "show", "hostnames", hostlist], env=env, capture_output=True, text=True,
                             timeout=30, check=True).stdout.split()
        assert out == expected, hostlist


@pytest.mark.parametrize("text", ["node01", "gpu[1:2]", "node[3]", "~node[1-2]", "web*", "[abc]x"])
def test_not_a_slurm_range(text: str) -> None:
    assert slurm_expand(text) is None


def test_a_comma_inside_brackets_separates_nothing() -> None:
    assert split_terms("node[01-03,07],!node02") == ["node[01-03,07]", "!node02"]
    assert split_terms("gpu:!node03") == ["gpu", "!node03"]
    assert split_terms("node0[1:4]") == ["node0[1:4]"]  # Ansible keeps a [x:y] range whole


def test_fleet_select_uses_the_inventory_it_loaded() -> None:
    from provision.spec import load_fleet
    from tests.conftest import EXAMPLE_INVENTORY

    fleet = load_fleet(EXAMPLE_INVENTORY / "hosts.yml")
    assert [h.name for h in fleet.select("ml_prod_v4[0:1]")] == ["node01", "node02"]
    assert [h.name for h in fleet.select(["node[01-08]", "!node0[3:7]"])] == ["node01", "node02", "node08"]
    assert [h.name for h in fleet.select(None, limit="~node0[78]")] == ["node07", "node08"]
    copy = fleet.model_copy()
    assert [h.name for h in copy.select("gpu_nodes,&node0[1:2]")] == ["node01", "node02"]


@pytest.mark.parametrize("mode", ["error", "warning"])
def test_the_callers_mismatch_setting_changes_nothing(inventory: Path, mode: str) -> None:
    """ANSIBLE_HOST_PATTERN_MISMATCH=error (or warning) in the environment: ranges still resolve, misses are ours."""
    from ansible import constants

    old = constants.HOST_PATTERN_MISMATCH
    constants.HOST_PATTERN_MISMATCH = mode
    try:
        resolver = HostPatterns.from_inventory(inventory)
        assert resolver.select("node0[1:2]") == ["node01", "node02"]
        with pytest.raises(InputError, match="'nodeX' matches no host"):
            resolver.select("nodeX")
    finally:
        constants.HOST_PATTERN_MISMATCH = old
