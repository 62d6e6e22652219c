"""Run one of the project's playbooks with ansible-runner; return a PlayResult or raise PlayFailed."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from provision.ansible import events
from provision.ansible.models import Change, Failure, HostStats, Managed, PlayResult, ProgressEvent, RunOptions
from provision.ansible.project import base_env, playbook_path, project_dir, strategy_env
from provision.errors import AnsibleRunError
from provision.redact import mask

ProgressCallback = Callable[[ProgressEvent], None]
_SECRET_WORDS = ("password", "passwd", "secret", "token", "key_data")


class PlayFailed(AnsibleRunError):
    """An Ansible run that failed; carries the typed result of the run."""

    def __init__(self, message: str, result: PlayResult) -> None:
        super().__init__(message)
        self.result = result


class _Collector:
    """Receives runner events: keeps changes and failures, forwards progress."""

    def __init__(self, on_event: ProgressCallback | None, secrets: tuple[str, ...]) -> None:
        self.changes: list[Change] = []
        self.failures: list[Failure] = []
        self.managed: list[Managed] = []
        self.on_event = on_event
        self.secrets = secrets
        self.stats: dict[str, Any] = {}

    def __call__(self, event: dict[str, Any]) -> bool:
        if event.get("event") == "playbook_on_stats":
            self.stats = event.get("event_data") or {}
        if (found := events.change(event)) is not None:
            self.changes.append(found)
        host = str((event.get("event_data") or {}).get("host", ""))
        self.managed += [Managed(host=host, kind=kind, name=name) for kind, name in events.managed(event)]
        if (failed := events.failure(event, self.secrets)) is not None:
            self.failures.append(failed)
        if self.on_event is not None and (step := events.progress(event)) is not None:
            self.on_event(step)
        return True


def run_playbook(
    options: RunOptions,
    on_event: ProgressCallback | None = None,
    config: Path | None = None,
    env: dict[str, str] | None = None,
) -> PlayResult:
    """Run `options.playbook`; return the result, or raise PlayFailed naming hosts, task and message."""
    import ansible_runner

    root = project_dir()
    playbook = playbook_path(root, options.playbook)
    inventory = _inventory_path(options.inventory)
    secrets = _secret_values(options.extravars)
    collector = _Collector(on_event, secrets)
    envvars = base_env(root, config) | strategy_env(options.strategy) | (env or {})
    with tempfile.TemporaryDirectory(prefix="provision-ansible-") as private:
        runner = ansible_runner.run(
            private_data_dir=private,
            project_dir=str(root),
            playbook=str(playbook),
            inventory=str(inventory),
            limit=",".join(options.limit) or None,
            extravars=dict(options.extravars) or None,
            cmdline=_cmdline(options) or None,
            forks=options.forks,
            envvars=envvars,
            event_handler=collector,
            quiet=True,
            timeout=options.timeout_s,
            suppress_env_files=True,
            cancel_callback=_never_cancel,
        )
        tail = _stdout_tail(runner)
    result = PlayResult(
        status=str(runner.status),
        rc=int(runner.rc if runner.rc is not None else -1),
        check=options.check,
        hosts=_host_stats(collector.stats),
        changes=collector.changes,
        failures=collector.failures,
        managed=collector.managed,
    )
    if not result.ok:
        raise PlayFailed(failure_message(options.playbook, result, mask(tail, secrets)), result)
    return result


def _never_cancel() -> bool:
    """Without a cancel callback ansible-runner replaces the process's SIGINT and SIGTERM handlers (main
    thread) for good: Ctrl-C would no longer raise KeyboardInterrupt in a campaign or bring-up afterwards.
    Ctrl-C reaches ansible-playbook through the terminal's process group and KeyboardInterrupt ends the wait."""
    return False


def failure_message(playbook: str, result: PlayResult, tail: str = "") -> str:
    """One line: which hosts failed, in which task, with which message (first failure per host)."""
    if result.status == "timeout":
        return f"ansible run of {playbook} timed out"
    first: dict[str, Failure] = {}
    for failed in result.failures:
        first.setdefault(failed.host, failed)
    if not first:
        return f"ansible run of {playbook} failed (rc {result.rc}): {tail or result.status}"
    parts = [
        f"{f.host} {'unreachable' if f.unreachable else 'failed'} in task '{f.task}': {f.msg}"
        for f in first.values()
    ]
    return f"ansible run of {playbook} failed on {len(first)} host(s): " + "; ".join(parts)


def _inventory_path(inventory: Path) -> Path:
    from provision.errors import InventoryError

    if not inventory.exists():
        raise InventoryError(f"{inventory}: inventory path does not exist")
    return inventory.resolve()


def _cmdline(options: RunOptions) -> str:
    args: list[str] = []
    if options.check:
        args.append("--check")
    if options.diff or options.check:
        args.append("--diff")
    if options.tags:
        args += ["--tags", ",".join(options.tags)]
    if options.skip_tags:
        args += ["--skip-tags", ",".join(options.skip_tags)]
    return " ".join(args)


def _host_stats(stats: dict[str, Any]) -> dict[str, HostStats]:
    keys = ("ok", "changed", "failures", "dark", "skipped", "processed")
    hosts: set[str] = set()
    for key in keys:
        if isinstance(stats.get(key), dict):
            hosts |= set(stats[key])
    return {
        host: HostStats(
            ok=stats.get("ok", {}).get(host, 0),
            changed=stats.get("changed", {}).get(host, 0),
            failed=stats.get("failures", {}).get(host, 0),
            unreachable=stats.get("dark", {}).get(host, 0),
            skipped=stats.get("skipped", {}).get(host, 0),
        )
        for host in sorted(hosts)
    }


def _secret_values(extravars: dict[str, Any]) -> tuple[str, ...]:
    return tuple(
        str(value)
        for key, value in extravars.items()
        if any(word in key.lower() for word in _SECRET_WORDS) and value not in (None, "")
    )


def _stdout_tail(runner: Any) -> str:
    """The ERROR line of a run that failed before any task (syntax, inventory), if any."""
    try:
        text = runner.stdout.read()
    except (OSError, AttributeError, ValueError):
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("ERROR!", "[ERROR]"))]
    picked = errors[0] if errors else (lines[-1] if lines else "")
    return picked[:400]
