"""The campaign's fixed worker threads: started up front, every job run once, errors handed back."""

from __future__ import annotations

import threading

import pytest

from provision.campaign.workers import Workers


def test_threads_exist_before_any_work_and_run_every_job_concurrently() -> None:
    before = threading.active_count()
    with Workers(8, prefix="t") as pool:
        assert threading.active_count() - before == pool.size == 8
        gate = threading.Barrier(8, timeout=5)  # passes only if all 8 jobs run at the same time
        futures = pool.submit(lambda i: (gate.wait(), i * i)[1], range(8))
        assert [f.result(timeout=5) for f in futures] == [i * i for i in range(8)]
    assert threading.active_count() == before


def test_an_exception_reaches_the_future_and_the_others_still_run() -> None:
    def job(i: int) -> int:
        if i == 2:
            raise ValueError("node 2 broke")
        return i

    with Workers(2) as pool:
        futures = pool.submit(job, range(5))
        with pytest.raises(ValueError, match="node 2 broke"):
            futures[2].result(timeout=5)
        assert [f.result(timeout=5) for i, f in enumerate(futures) if i != 2] == [0, 1, 3, 4]
