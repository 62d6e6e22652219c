"""kill -9 of a process writing the journal, at random moments: the file stays whole and consistent."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from provision.journal import Journal

WRITER = """
import sys
from provision.journal import Journal
j = Journal(sys.argv[1])
run = j.start_run("crash", "t")
print("ready", flush=True)
i = 0
while True:
    # two rows per transaction: a torn write would leave an odd count
    with j.transaction() as db:
        db.execute("INSERT INTO actions(run_id, node, stage, action, target, started_at) VALUES (?,?,?,?,?,0)",
                   (run, "n", "s", "a", str(i)))
        db.execute("INSERT INTO actions(run_id, node, stage, action, target, started_at) VALUES (?,?,?,?,?,0)",
                   (run, "n", "s", "b", str(i)))
    aid = j.action_started(run, "n", "s", "c", str(i))
    j.action_finished(aid, "ok")
    i += 1
"""


def test_kill_9_at_random_moments_leaves_a_consistent_journal(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    rng = random.Random(9)
    previous = 0
    for kills in range(1, 7):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.4))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with Journal(path) as j:
            assert j.integrity_ok()
            pairs = j.query("SELECT SUM(action = 'a'), SUM(action = 'b') FROM actions")[0]
            assert pairs[0] == pairs[1] and pairs[0] > previous
            previous = pairs[0]
            # at most the one action in flight at each kill is left open
            assert j.query("SELECT COUNT(*) FROM actions WHERE action = 'c' AND ended_at IS NULL")[0][0] <= kills
