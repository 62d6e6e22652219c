"""A fixed set of worker threads, all started before the first wave.

A ThreadPoolExecutor starts its threads as work arrives, one at a time, and each start waits for the
new thread to run; with the first nodes of a wave already busy under the GIL, starting 250 took
~1.7 s, so the last node of a wave began that much after the first. Started up front, every node of
a wave is taken up at once.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")
_STOP = None


class Workers:
    """`size` threads taking jobs from one queue until closed (use as a context manager)."""

    def __init__(self, size: int, prefix: str = "worker") -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._prefix = prefix
        self._threads = [threading.Thread(target=self._loop, name=f"{prefix}-{i}", daemon=True)
                         for i in range(max(1, size))]
        for thread in self._threads:
            thread.start()

    def grow(self, size: int) -> None:
        """Start more threads, up to `size` in all (from the thread that submits: the engine's loop)."""
        more = [threading.Thread(target=self._loop, name=f"{self._prefix}-{i}", daemon=True)
                for i in range(len(self._threads), size)]
        for thread in more:
            thread.start()
        self._threads += more

    @property
    def size(self) -> int:
        return len(self._threads)

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not _STOP:
            job()

    def submit(self, fn: Callable[[T], object], items: Iterable[T]) -> list[Future[object]]:
        """One job per item; each future holds its result or exception."""
        futures: list[Future[object]] = []
        for item in items:
            future: Future[object] = Future()
            self._jobs.put(lambda f=future, i=item: _run(f, fn, i))  # type: ignore[misc]
            futures.append(future)
        return futures

    def close(self) -> None:
        """Let queued jobs finish, then stop every thread."""
        for _ in self._threads:
            self._jobs.put(_STOP)
        for thread in self._threads:
            thread.join()

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _run(future: Future[object], fn: Callable[[T], object], item: T) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(fn(item))
    except BaseException as exc:  # handed to whoever waits on the future, as an executor would
        future.set_exception(exc)
