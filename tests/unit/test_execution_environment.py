"""execution-environment.yml (ansible-builder 3, for AWX / AAP): the keys ansible-builder reads, the files it
names present, provision installed with the postgres extra; `ansible-builder create` where it is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

EE = ROOT / "execution-environment.yml"


def test_the_definition_names_what_ansible_builder_needs() -> None:
    doc = yaml.safe_load(EE.read_text())
    assert doc["version"] == 3 and doc["images"]["base_image"]["name"]
    deps = doc["dependencies"]
    assert deps["ansible_core"]["package_pip"].startswith("ansible-core>=2.19")  # as the `fast` extra pins it
    assert deps["ansible_runner"]["package_pip"].startswith("ansible-runner")
    for key in ("python", "system"):
        assert (ROOT / deps[key]).is_file(), deps[key]
    for item in doc["additional_build_files"]:
        assert (ROOT / item["src"]).is_dir(), item["src"]
    final = " ".join(doc["additional_build_steps"]["append_final"])
    assert "provision-*.whl'[postgres" in final and "provision-node-" in final
    assert "psycopg[binary]" in (ROOT / deps["python"]).read_text()


@pytest.mark.skipif(shutil.which("ansible-builder") is None, reason="ansible-builder is not installed here")
def test_ansible_builder_create(tmp_path: Path) -> None:
    context = tmp_path / "context"
    proc = subprocess.run(["ansible-builder", "create", "-f", str(EE), "-c", str(context)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = [p for p in (context / "Containerfile", context / "Dockerfile") if p.is_file()]  # by runtime
    containerfile = built.read_text()
    assert "provision-*.whl" in containerfile and "ansible-core" in containerfile
