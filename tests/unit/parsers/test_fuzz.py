"""Fuzzing every parser: random text, random JSON, and truncated/mutated real captures.

Whatever the input, a parser either returns a model (or a tuple of models) or raises
ParseError naming its tool. Example counts stay small so this file runs in seconds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from provision.conformance import parsers as p
from provision.errors import ParseError

from ._fixtures import H100_590, H100_MIG_590, section, text

Parser = Callable[[str], Any]

SAMPLES: dict[str, tuple[Parser, str]] = {
    "nvsmi-q": (p.parse_nvidia_smi_query, text("nvidia-smi/gpud/nvidia-smi-q.535.161.08.h100x8.txt")),
    "nvsmi-q-590": (p.parse_nvidia_smi_query, section(H100_MIG_590, "nvidia-smi -q")),
    "nvsmi-xml": (p.parse_nvidia_smi_xml, text("nvidia-smi/telegraf/tesla-t4.xml")),
    "nvsmi-csv": (p.parse_query_gpu_csv, text("nvidia-smi/nvidia_gpu_exporter/query.txt")),
    "nvsmi-L": (p.parse_nvidia_smi_list, section(H100_MIG_590, "nvidia-smi -L", phase="capabilities")),
    "nvsmi-table": (p.parse_nvidia_smi_table, text("nvidia-smi/gpud/nvidia-smi.550.90.07.h100x8.txt")),
    "nvlink": (p.parse_nvlink_status, section(H100_590, "nvidia-smi nvlink -s", phase="capabilities")),
    "nvlink-e": (p.parse_nvlink_errors, text("nvidia-smi/handwritten/nvlink-e.h100x2.txt")),
    "xid": (p.parse_xid_events, text("kernel-log/handwritten/dmesg.xid.txt")),
    "topo": (p.parse_topo_matrix, text("nvidia-smi/handwritten/topo-m.8gpu-4nic.txt")),
    "ibstat": (p.parse_ibstat, text("infiniband/gpud/ibstat.47.0.h100.some.down.0.txt")),
    "ibstatus": (p.parse_ibstatus, text("infiniband/gpud/ibstatus.39.0.a100.all.active.0.txt")),
    "ibv_devinfo": (p.parse_ibv_devinfo, text("infiniband/qemu-vm/ibv_devinfo-v.rxe.txt")),
    "zpool-status": (p.parse_zpool_status, text("zfs/handwritten/zpool-status.degraded.txt")),
    "zpool-list": (p.parse_zpool_list, "tank\t1000\t10\t990\t-\t-\t1\t1\t1.00x\tONLINE\t-\n"),
    "zfs-list": (p.parse_zfs_list, "tank\t10\t990\t10\t/tank\ntank/a\t5\t990\t5\t/tank/a\n"),
    "zfs-get": (p.parse_zfs_get, text("zfs/handwritten/zfs-get-Hp.txt")),
    "mdstat": (p.parse_mdstat, text("mdraid/node_exporter/proc-mdstat.txt")),
    "mdadm": (p.parse_mdadm_detail, text("mdraid/qemu-vm/mdadm-detail.recovery.txt")),
    "nvme-list": (p.parse_nvme_list, text("nvme/qemu-vm/nvme-list-v.json")),
    "nvme-smart": (p.parse_nvme_smart_log, text("nvme/qemu-vm/nvme-smart-log.nvme0.json")),
    "nvme-id": (p.parse_nvme_id_ctrl, text("nvme/ironlib/nvme-id-ctrl.json")),
    "smartctl": (p.parse_smartctl_nvme, text("nvme/ironlib/smartctl-nvme0.dell-r6515.json")),
    "lsblk": (p.parse_lsblk, text("nvme/ironlib/lsblk.json")),
    "dmidecode": (p.parse_dmidecode, text("dmidecode/linuxhw/dmidecode.supermicro-x13dei.2x-xeon-gold-5416s.ddr5.txt")),
    "lscpu": (p.parse_lscpu, text("lscpu/linuxhw/lscpu.2x-xeon-platinum-8280.cascadelake.txt")),
    "cpuinfo": (p.parse_cpuinfo, text("lscpu/telegraf/proc-cpuinfo.xeon-platinum-8480plus.txt")),
    "meminfo": (p.parse_meminfo, text("meminfo/build-machine/proc-meminfo.txt")),
    "dcgmi": (p.parse_dcgmi_diag, text("dcgm/handwritten/dcgmi-diag-r2.fail.txt")),
    "systemctl": (p.parse_systemctl_show, text("fabricmanager/handwritten/systemctl-show.nvidia-fabricmanager.txt")),
    "fm-log": (p.parse_fabricmanager_log, text("fabricmanager/gpud/fabricmanager.log")),
}
JSON_PARSERS = ("nvme-list", "nvme-smart", "nvme-id", "smartctl", "lsblk")

# PARSERS_FUZZ_EXAMPLES raises the count for a long local hunt; the default keeps CI fast.
FUZZ = settings(
    max_examples=int(os.environ.get("PARSERS_FUZZ_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _outcome(parser: Parser, data: str) -> None:
    """Call the parser; only a model, a tuple of models, or ParseError may come out."""
    try:
        result = parser(data)
    except ParseError as exc:
        assert exc.tool == parser.tool  # type: ignore[attr-defined]
        assert "\n" not in str(exc)
        return
    items = result if isinstance(result, tuple) else (result,)
    assert all(isinstance(item, BaseModel) for item in items)


def test_every_parser_is_sampled() -> None:
    assert {parser for parser, _ in SAMPLES.values()} == set(p.PARSERS)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_samples_parse(name: str) -> None:
    parser, sample = SAMPLES[name]
    _outcome(parser, sample)
    parser(sample)  # the unmutated sample must parse


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("junk", ["", "   \n\t\n", "\x00\x01binary", "garbage\n", "{}", "[]", "null"])
def test_fixed_junk(name: str, junk: str) -> None:
    parser, _ = SAMPLES[name]
    _outcome(parser, junk)


@pytest.mark.parametrize("name", sorted(SAMPLES))
@FUZZ
@given(junk=st.text(max_size=400))
def test_random_text(name: str, junk: str) -> None:
    _outcome(SAMPLES[name][0], junk)


@pytest.mark.parametrize("name", sorted(SAMPLES))
@FUZZ
@given(cut=st.floats(min_value=0.0, max_value=1.0))
def test_truncated_capture(name: str, cut: float) -> None:
    parser, sample = SAMPLES[name]
    _outcome(parser, sample[: int(len(sample) * cut)])


def _mutate(sample: str, data: st.DataObject) -> str:
    lines = sample.splitlines(keepends=True)
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        if not lines:
            break
        i = data.draw(st.integers(0, len(lines) - 1), label="line")
        op = data.draw(st.sampled_from(["drop", "dup", "replace", "splice", "swap"]), label="op")
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "replace":
            lines[i] = data.draw(st.text(max_size=60), label="text") + "\n"
        elif op == "splice":
            at = data.draw(st.integers(0, len(lines[i])), label="at")
            lines[i] = lines[i][:at] + data.draw(st.text(max_size=12), label="bit") + lines[i][at:]
        else:
            j = data.draw(st.integers(0, len(lines) - 1), label="other")
            lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


@pytest.mark.parametrize("name", sorted(SAMPLES))
@FUZZ
@given(data=st.data())
def test_mutated_capture(name: str, data: st.DataObject) -> None:
    parser, sample = SAMPLES[name]
    _outcome(parser, _mutate(sample, data))


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=20,
)


@pytest.mark.parametrize("name", JSON_PARSERS)
@FUZZ
@given(data=st.data())
def test_json_values_in_known_shape(name: str, data: st.DataObject) -> None:
    """Keep the sample's keys but give them random JSON values (types the tool never prints)."""
    parser, sample = SAMPLES[name]
    obj = json.loads(sample)
    nested = obj.get("Devices") or obj.get("blockdevices")
    if nested and data.draw(st.booleans(), label="inside a device"):
        inner = nested[0]
        inner_key = data.draw(st.sampled_from(sorted(inner)), label="inner key")
        inner[inner_key] = data.draw(_JSON, label="inner value")
    else:
        key = data.draw(st.sampled_from(sorted(obj)), label="key")
        obj[key] = data.draw(_JSON, label="value")
    _outcome(parser, json.dumps(obj))


def test_deep_json_nesting_is_a_parse_error() -> None:
    deep = '{"blockdevices": [' + '{"name": "x", "children": [' * 40 + "]}" * 40 + "]}"
    with pytest.raises(ParseError, match="deeper than"):
        p.parse_lsblk(deep)
    with pytest.raises(ParseError):
        p.parse_nvme_list("[" * 100000 + "]" * 100000)
