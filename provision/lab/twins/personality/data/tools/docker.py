#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `docker` CLI for provision lab twins (stdlib only): no daemon, no images, no containers.

What the container_runtime role and the conformance check use, with the real CLI's messages:
`docker --version`, `docker info --format '{{json .Runtimes}}'` (runc, io.containerd.runc.v2, plus the runtimes
of /etc/docker/daemon.json), `{{.DefaultRuntime}}`, `docker image inspect`, `docker pull` (records the name:
nothing is downloaded), `docker load -i` (a file written by the stand-in `docker save`), and
`docker run [--rm] [--pull=never] [--gpus all] IMAGE nvidia-smi ARGS`, which prints the twin's stand-in GPUs.
`--gpus` needs the NVIDIA hook (nvidia-container-toolkit installed), as the real daemon does; without it:
'could not select device driver "" with capabilities: [[gpu]]'. The daemon is "running" while docker.service
is active. It reads daemon.json at each call (the real daemon reads it when it starts: the role restarts it).
"""

from __future__ import annotations

import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import containers_lab as lab
import labstate

DAEMON_JSON = lab.path("etc/docker/daemon.json")
IMAGES = lab.path("var/lib/docker/provision-lab-images.json")
DOWN = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
BUILTIN = {"io.containerd.runc.v2": {"path": "runc"}, "runc": {"path": "runc"}}
SAVED = "LAB STAND-IN docker image archive: "


def _images() -> list[str]:
    return list(lab.read_json(IMAGES, []))


def _normal(image: str) -> str:
    return image if ":" in image.rsplit("/", 1)[-1] or "@" in image else image + ":latest"


def _daemon(prefix: str = "") -> None:
    if not labstate.service_active("docker.service"):
        labstate.die(f"{prefix}{DOWN}" + ("\nSee 'docker run --help'." if prefix else ""), 125 if prefix else 1)


def _config() -> dict:
    return dict(lab.read_json(DAEMON_JSON, {}))


def _info(args: list[str]) -> None:
    _daemon()
    runtimes = {**BUILTIN, **{k: {"path": v.get("path", "")} for k, v in _config().get("runtimes", {}).items()}}
    fmt = args[args.index("--format") + 1] if "--format" in args else args[1] if args[:1] == ["-f"] else ""
    if fmt == "{{json .Runtimes}}":
        print(lab.json.dumps(runtimes, separators=(",", ":"), sort_keys=True))
    elif fmt == "{{.DefaultRuntime}}":
        print(_config().get("default-runtime", "runc"))
    elif not fmt:
        default = _config().get("default-runtime", "runc")
        print(f"Server:\n Runtimes: {' '.join(sorted(runtimes))}\n Default Runtime: {default}")
    else:
        labstate.die(f"LAB STAND-IN: docker info --format {fmt!r} is not simulated", 1)


def _inspect(args: list[str]) -> None:
    _daemon()
    names = [a for a in args if not a.startswith("-") and a != "{{.Id}}"]
    missing = [n for n in names if _normal(n) not in _images()]
    if missing:
        labstate.die("\n".join(f"Error response from daemon: No such image: {_normal(n)}" for n in missing), 1)
    for n in names:
        digest = "sha256:" + hashlib.sha256(_normal(n).encode()).hexdigest()
        print(digest if "--format" in args else lab.json.dumps([{"Id": digest, "RepoTags": [_normal(n)]}]))


def _pull(image: str) -> None:
    _daemon()
    name = _normal(image)
    print(f"{name.rsplit(':', 1)[-1]}: Pulling from {name.rsplit(':', 1)[0]}")
    print("LAB STAND-IN: nothing downloaded; the name is recorded")
    print(f"Status: Downloaded newer image for {name}")
    lab.write_json(IMAGES, sorted({*_images(), name}))


def _load(args: list[str]) -> None:
    _daemon()
    file = next((args[i + 1] for i, a in enumerate(args) if a in ("-i", "--input") and i + 1 < len(args)), "")
    try:
        with open(file, encoding="utf-8") as fh:
            first = fh.readline().strip()
    except OSError as exc:
        labstate.die(f"open {file}: {exc.strerror.lower() if exc.strerror else 'error'}", 1)
    if not first.startswith(SAVED):
        labstate.die("Error response from daemon: unexpected EOF (LAB STAND-IN: not a stand-in archive)", 1)
    name = _normal(first[len(SAVED):])
    lab.write_json(IMAGES, sorted({*_images(), name}))
    print(f"Loaded image: {name}")


def _run(args: list[str]) -> None:
    opts, i = {"pull": "missing", "gpus": "", "runtime": ""}, 0
    while i < len(args) and args[i].startswith("-"):
        flag, _, value = args[i].lstrip("-").partition("=")
        if flag in opts and not value:
            i, value = i + 1, args[i + 1] if i + 1 < len(args) else ""
        if flag in opts:
            opts[flag] = value
        i += 1
    if i >= len(args):
        labstate.die('docker: "docker run" requires at least 1 argument.', 125)
    image, command = _normal(args[i]), args[i + 1:]
    _daemon("docker: ")
    if image not in _images():
        if opts["pull"] == "never":
            labstate.die(f"docker: Error response from daemon: No such image: {image}.\nSee 'docker run --help'.", 125)
        labstate.die(f"Unable to find image '{image}' locally\ndocker: Error response from daemon: Get "
                     '"https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host '
                     "(LAB STAND-IN: the twin reaches no registry).\nSee 'docker run --help'.", 125)
    runtimes = _config().get("runtimes", {})
    if opts["runtime"] and opts["runtime"] not in {**BUILTIN, **runtimes}:
        labstate.die(f"docker: Error response from daemon: unknown or invalid runtime name: {opts['runtime']}.", 125)
    nvidia = bool(opts["gpus"]) or opts["runtime"] == "nvidia" or _config().get("default-runtime") == "nvidia"
    if opts["gpus"] and labstate.installed_version("nvidia-container-toolkit") is None:
        labstate.die('docker: Error response from daemon: could not select device driver "" with capabilities: '
                     "[[gpu]].", 125)
    if nvidia and labstate.kernel_module_version() is None:
        labstate.die("docker: Error response from daemon: failed to create task for container: failed to create "
                     "shim task: OCI runtime create failed: nvidia-container-cli: initialization error: nvml error: "
                     "driver not loaded: unknown.", 125)
    if command[:1] == ["nvidia-smi"] and nvidia:
        lab.nvidia_smi_in_container(command[1:])
    what = command[0] if command else "(the image's entrypoint)"
    labstate.die("docker: Error response from daemon: failed to create task for container: failed to create shim "
                 "task: OCI runtime create failed: runc create failed: unable to start container process: exec: "
                 f'"{what}": executable file not found in $PATH: unknown. (LAB STAND-IN: only nvidia-smi with the '
                 "NVIDIA runtime is simulated)", 127)


def main(argv: list[str]) -> None:
    if argv[:1] in (["--version"], ["-v"]):
        print(f"Docker version {lab.version_of('docker-ce-cli', '27.4.1')}, build lab-stand-in")
    elif argv[:1] == ["info"]:
        _info(argv[1:])
    elif argv[:2] == ["image", "inspect"] or argv[:1] == ["inspect"]:
        _inspect(argv[2:] if argv[0] == "image" else argv[1:])
    elif argv[:1] == ["pull"] or argv[:2] == ["image", "pull"]:
        _pull(argv[-1])
    elif argv[:1] == ["load"] or argv[:2] == ["image", "load"]:
        _load(argv)
    elif argv[:1] == ["save"]:  # docker save -o FILE IMAGE: a stand-in archive naming the image
        out, image = argv[argv.index("-o") + 1], argv[-1]
        _daemon()
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(SAVED + _normal(image) + "\n")
    elif argv[:1] == ["run"]:
        _run(argv[1:])
    else:
        labstate.die(f"LAB STAND-IN: docker {' '.join(argv[:2])} is not simulated", 1)


if __name__ == "__main__":
    main(sys.argv[1:])
