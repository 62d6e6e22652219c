"""Provenance: the spec digest is stable where it should be, changes where it must; the command line is
rebuilt from the parsed options and never carries a secret."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from provision.conformance.model import NodeReport
from provision.conformance.provenance import command_line, provision_version, run_digest, spec_digest
from provision.redact import register_secret
from tests.unit.conformance.helpers import spec


def _opt(name: str, *opts: str, default: Any = None) -> SimpleNamespace:
    return SimpleNamespace(name=name, opts=list(opts), default=default, param_type_name="option")


def _arg(name: str) -> SimpleNamespace:
    return SimpleNamespace(name=name, opts=[name], default=None, param_type_name="argument")


def test_spec_digest_ignores_where_images_live_but_not_what_they_are() -> None:
    base = spec()
    moved = base.model_copy(update={"firmware": tuple(fw.model_copy(update={"image": "/elsewhere/" + fw.image})
                                                      for fw in base.firmware)})
    assert base.firmware and spec_digest(moved) == spec_digest(base)
    other_image = base.model_copy(update={"firmware": (base.firmware[0].model_copy(update={"sha256": "f" * 64}),
                                                       *base.firmware[1:])})
    assert spec_digest(other_image) != spec_digest(base)
    assert spec_digest(spec(**{"gpu.count": 4})) != spec_digest(base)
    assert len(spec_digest(base)) == 64


def test_run_digest_is_order_free_and_follows_the_specs() -> None:
    a, b = (NodeReport(node=n, profile="p", spec_digest=d) for n, d in (("n1", "a" * 64), ("n2", "b" * 64)))
    assert run_digest([a, b]) == run_digest([b, a]) != run_digest([a])
    assert run_digest([a, a.model_copy(update={"node": "n3"})]) == run_digest([a])


def test_command_line_from_parsed_options_never_a_secret() -> None:
    register_secret("hunter2-very-secret")
    params = [_arg("nodes"), _opt("inventory", "-i", "--inventory", default="inventory/hosts.yml"),
              _opt("level", "--level", default="full"), _opt("no_bmc", "--no-bmc", default=False),
              _opt("bmc_password", "--bmc-password"), _opt("note", "--note"), _opt("junit", "--junit")]
    values = {"nodes": ["node01", "node 02"], "inventory": "inventory/hosts.yml", "level": "quick", "no_bmc": True,
              "bmc_password": "s3cr3t-pw", "note": "uses hunter2-very-secret", "junit": None}
    line = command_line("provision verify", params, values)
    assert line == ("provision verify node01 'node 02' --level quick --no-bmc --bmc-password '<redacted>' "
                    "--note 'uses <redacted>'")
    assert "s3cr3t" not in line and "hunter2" not in line


def test_version_comes_from_the_package_metadata() -> None:
    from importlib.metadata import version

    assert provision_version() == version("provision")
