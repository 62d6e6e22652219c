"""Build the lab apt repository of stand-in packages (dpkg-deb + dpkg-scanpackages).

LAB STAND-IN: the .debs are empty shells (see packages.py). The repository is flat
(`deb [trusted=yes] file:/srv/repo ./` or the same over http), unsigned: the roles' lab
override marks it trusted.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from provision.errors import LabError
from provision.lab.twins.personality.packages import (
    CATALOG,
    LAB_TOOLS_DIR,
    TOOL_HEADER,
    Service,
    StandIn,
    entry_point,
    upstream,
)

_STAMP = ".provision-lab-repo"
_HEADER = TOOL_HEADER
_MAINTAINER = "provision lab <lab@provision.invalid>"


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise LabError(f"{cmd[0]} not found: install dpkg-dev on the host (apt-get install dpkg-dev)") from exc
    if done.returncode != 0:
        raise LabError(f"{' '.join(cmd[:3])} failed: {done.stderr.strip()[:300]}")
    return done.stdout


def _arch() -> str:
    return _run(["dpkg", "--print-architecture"]).strip()


def _write(root: Path, path: str, text: str, mode: int = 0o644) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    target.chmod(mode)


def _control(pkg: StandIn, version: str, arch: str) -> str:
    lines = [f"Package: {pkg.name}", f"Version: {version}", f"Architecture: {arch}",
             f"Maintainer: {_MAINTAINER}", "Installed-Size: 1"]
    if pkg.depends:
        lines.append("Depends: " + pkg.depends.replace("{version}", version))
    if pkg.conflicts:
        lines.append(f"Conflicts: {pkg.conflicts}")
    lines += [
        f"Section: {pkg.section}",
        "Priority: optional",
        f"Description: {pkg.summary} (LAB STAND-IN)",
        " LAB STAND-IN: an empty package with the real name and version, built by the",
        " provision lab so that apt pinning, holds and upgrades are real apt work.",
        " It contains no vendor software; any tool it installs prints simulated output.",
    ]
    return "\n".join(lines) + "\n"


def _unit(svc: Service) -> str:
    restart = "Restart=on-failure\nRestartSec=3\n" if svc.restart_on_failure else ""
    limit = "StartLimitIntervalSec=0\n" if svc.restart_on_failure else ""
    install = "[Install]\nWantedBy=multi-user.target\n" if svc.enable_on_install else ""
    return (
        f"# LAB STAND-IN unit shipped by a provision lab package\n[Unit]\nDescription={svc.description}\n"
        f"After=network.target\n{limit}\n[Service]\nType=simple\nExecStart={svc.exec_start or svc.daemon}\n"
        f"{restart}\n{install}"
    )


def _daemon(svc: Service) -> str:
    body = (f'exec /usr/bin/python3 -S -I {LAB_TOOLS_DIR}/{svc.lab_impl}.py "$@"' if svc.lab_impl
            else "exec sleep infinity")
    return f"#!/bin/sh\n{_HEADER} (a daemon that idles)\n{body}\n"


def _maintainer_scripts(units: list[str]) -> dict[str, str]:
    names = " ".join(units)
    live = "[ -d /run/systemd/system ]"
    return {
        "postinst": (
            "#!/bin/sh\nset -e\n# LAB STAND-IN maintainer script: enable and (re)start the units, as Debian does\n"
            f'if [ "$1" = configure ] && {live}; then\n  systemctl daemon-reload >/dev/null 2>&1 || true\n'
            f"  for u in {names}; do systemctl enable \"$u\" >/dev/null 2>&1 || true;"
            ' systemctl restart "$u" >/dev/null 2>&1 || true; done\nfi\n'
        ),
        "prerm": (f"#!/bin/sh\nset -e\nif {live}; then\n  for u in {names}; do"
                  ' systemctl stop "$u" >/dev/null 2>&1 || true; done\nfi\n'),
        "postrm": (
            "#!/bin/sh\nset -e\n"
            f'if [ "$1" = purge ]; then\n  for u in {names}; do'
            ' rm -f "/etc/systemd/system/multi-user.target.wants/$u"; done\nfi\n'
            f"if {live}; then systemctl daemon-reload >/dev/null 2>&1 || true; fi\n"
        ),
    }


def stage_package(pkg: StandIn, version: str, arch: str, root: Path) -> None:
    """Lay out one package's tree (DEBIAN/ and payload) under root."""
    up = upstream(version)
    _write(root, "DEBIAN/control", _control(pkg, version, arch))
    for path, impl in pkg.tools.items():
        _write(root, path, entry_point(impl), 0o755)
    for svc in pkg.services:
        _write(root, f"/lib/systemd/system/{svc.unit}", _unit(svc))
        if not svc.exec_start:
            _write(root, svc.daemon, _daemon(svc), 0o755)
    enabled = [s.unit for s in pkg.services if s.enable_on_install]
    if enabled:
        for name, text in _maintainer_scripts(enabled).items():
            _write(root, f"DEBIAN/{name}", text, 0o755)
    for path, text in pkg.files.items():
        _write(root, path.replace("{upstream}", up), text.replace("{upstream}", up).replace("{version}", version))
    _write(root, f"/usr/share/doc/{pkg.name}/README.lab",
           f"LAB STAND-IN for {pkg.name} {version}: built by the provision lab; no vendor software.\n")


def _catalog_digest(arch: str) -> str:
    blob = json.dumps([p.model_dump(mode="json") for p in CATALOG], sort_keys=True) + arch
    blob += Path(__file__).read_text(encoding="utf-8")
    return hashlib.sha256(blob.encode()).hexdigest()


def build_repo(repo_dir: Path) -> None:
    """Build every stand-in version into repo_dir with a Packages index; reused when unchanged."""
    arch = _arch()
    digest = _catalog_digest(arch)
    stamp = repo_dir / _STAMP
    if stamp.exists() and stamp.read_text(encoding="utf-8").strip() == digest and (repo_dir / "Packages").exists():
        return
    pool = repo_dir / "pool"
    shutil.rmtree(pool, ignore_errors=True)
    pool.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="provision-repo-") as tmp:
        for pkg in CATALOG:
            for version in pkg.versions:
                root = Path(tmp) / f"{pkg.name}_{version.replace(':', '%')}"
                stage_package(pkg, version, arch, root)
                _run(["dpkg-deb", "--root-owner-group", "-Zgzip", "-b", str(root), str(pool)])
    packages = _run(["dpkg-scanpackages", "--multiversion", "pool", "/dev/null"], cwd=repo_dir)
    (repo_dir / "Packages").write_text(packages, encoding="utf-8")
    stamp.write_text(digest + "\n", encoding="utf-8")
