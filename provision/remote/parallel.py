"""Run one command on many nodes at once (`provision exec`)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from provision.remote.ssh import CommandResult, SshError, run
from provision.spec import HostEntry


def run_many(hosts: Sequence[HostEntry], command: str, concurrency: int = 16,
             timeout: float = 60.0) -> list[CommandResult]:
    """Results in host order; an unreachable node yields exit code 255 and the reason in stderr."""

    def one(host: HostEntry) -> CommandResult:
        try:
            return run(host, command, timeout=timeout)
        except SshError as exc:
            return CommandResult(node=host.name, command=command, exit_code=255, stdout="",
                                 stderr=str(exc), seconds=0.0)

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(one, hosts))
