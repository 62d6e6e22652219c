"""A fleet validates each profile once for the hosts that share it, and never hands one host another's spec."""

from __future__ import annotations

from pathlib import Path

import yaml

from provision.spec import load_fleet

PROFILE = "group_vars/all/profile_ml_prod_v4.yml"
VAR = "provision_profile_ml_prod_v4"


def test_hosts_sharing_a_profile_share_its_spec_and_a_host_override_gets_its_own(inventory_copy: Path) -> None:
    """node02 sets the profile's variable in its host_vars (Ansible: the host's value wins): a spec validated once
    per profile *name* would give node02 node01's spec."""
    inv = inventory_copy.parent
    profile = yaml.safe_load((inv / PROFILE).read_text())[VAR]
    mine = {**profile, "description": "node02's own"}
    host_vars = inv / "host_vars" / "node02.yml"
    data = yaml.safe_load(host_vars.read_text()) or {}
    host_vars.write_text(yaml.safe_dump({**data, VAR: mine}))
    fleet = load_fleet(inventory_copy)
    same = [h for h in fleet.hosts.values() if h.profile == "ml_prod_v4" and h.name != "node02"]
    assert len(same) >= 2 and all(h.spec is same[0].spec for h in same)  # validated once, shared
    assert same[0].spec.description == profile["description"]
    assert fleet.hosts["node02"].spec.description == "node02's own"
