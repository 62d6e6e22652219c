#!/usr/bin/env python3
"""Mutation check: put plausible bugs into a copy of the code, one at a time, and see the unit tests catch them.

Each site in SITES names a file, a snippet of it, the snippet with a bug in it (a mutant), and the unit tests
that must fail with that bug. The working tree is copied once into a temporary directory (the files git tracks
and those it would track: your uncommitted work too); each mutant is written into the copy, its tests run
there (SQLite only: `-m "not lab and not postgres"`), and the copy's file is put back. The working tree is
never written to, so nothing is left modified, even on Ctrl-C; the copy is removed as the script ends.

    python scripts/mutation_check.py                 every site (a few minutes on 2 cores)
    python scripts/mutation_check.py --only NAME     one site (repeat --only, or NAME,NAME)
    python scripts/mutation_check.py --list          the sites, with the bug each one puts in

A developer's tool, not part of CI. First the tests of every selected site run on the unmutated copy (a site
whose tests fail there proves nothing: exit 2). Then each site is `killed` (its tests failed), `survived` (they
passed: a bug the tests let through) or `error` (no test ran: a bad selection). Exit 0 when every mutant was
killed, 1 when one survived, 2 on an error. Survivors known and accepted are listed in README.md ("Tests").
tests/unit/test_mutation_sites.py checks that every site's snippet occurs exactly once in its file, so a site
cannot silently stop applying when the code around it changes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKERS = "not lab and not postgres"


@dataclass(frozen=True)
class Site:
    """One plausible bug: `original` (exactly once in `file`) replaced by `mutant`; `tests` must then fail."""

    name: str
    file: str
    original: str
    mutant: str
    tests: tuple[str, ...]
    bug: str


FW = "tests/unit/bringup/test_firmware_apply.py"
RESOURCES = "tests/unit/redfish/test_rf_resources.py"
ENGINE = "tests/unit/campaign/test_engine.py"
FENCE = "tests/unit/campaign/test_leader_fence.py"
PLAIN = "tests/unit/test_plain_http_bmc.py"
DIGEST = "tests/unit/bringup/test_configure_evidence.py::test_content_digest_follows_bytes_and_the_exec_bit"
SEEDS = "tests/unit/fuzz/test_fuzz_redfish_resources.py::test_seeds_parse_unchanged"
CATALOG = "tests/unit/campaign/test_catalog.py"
NOT_APPLICABLE = "tests/unit/campaign/test_not_applicable.py"
PLATFORM_CHECK = "tests/unit/conformance/test_runner_bmc_cli.py::test_bmc_platform_is_judged_against_the_profile"
PLACEHOLDER = "tests/unit/redfish/test_platform_fit.py::test_a_placeholder_serial_or_uuid_names_no_board"
SHARED_GATE = "tests/unit/campaign/test_shared_gate.py"
REDACTION = tuple(f"tests/unit/test_log_redaction.py::{t}" for t in (
    "test_unregistered_secrets_are_masked_by_shape", "test_secrets_of_three_characters_and_more_are_registered",
    "test_the_longest_secret_is_masked_first"))

FIRMWARE = (FW, RESOURCES, "tests/unit/bringup/test_stage_plans.py", "tests/unit/bringup/test_stage_apply.py",
            "tests/unit/redfish/test_rf_plans.py", "tests/unit/redfish/test_fw_apply_time.py",
            "tests/unit/redfish/test_post_once.py", "tests/unit/redfish/test_rf_unchecked.py",
            "tests/unit/redfish/test_rf_cli_deadline.py", "tests/unit/campaign/test_redfish_updater.py",
            "tests/unit/campaign/test_evidence.py")
UPDATER = tuple(f"tests/unit/campaign/test_redfish_updater.py::{t}" for t in (
    "test_the_conformance_gate_names_every_problem", "test_the_redfish_health_gate_reads_system_manager_and_chassis"))
PLANS = "tests/unit/redfish/test_rf_plans.py"
CLI = ("tests/unit/test_cli_conventions.py", "tests/unit/conformance/test_outcomes.py")
OUTCOMES = "tests/unit/conformance/test_outcomes.py"
VERDICT = ("tests/unit/conformance/test_outcomes.py", "tests/unit/conformance/test_reports.py")
TRANSPORT = (PLAIN, "tests/unit/test_transport_tls.py", "tests/unit/redfish/test_rf_auth_modes.py")

SITES: tuple[Site, ...] = (
    # -- platform identity: an image only for the board it was built for (issue 38) -----------------------
    Site("image-fit-not-checked", "provision/redfish/ops/firmware.py",
         "    unfit = [c for c in baseline if not c.target.fits(state.identity)]\n", "    unfit = []\n",
         ("tests/unit/redfish/test_platform_fit.py",),
         "firmware plan/update sends a baseline image to a board it was not built for"),
    Site("campaign-image-for-any-node", "provision/campaign/node.py",
         "    return [c for c in components if c.target.fits(state.identity)]\n", "    return list(components)\n",
         ("tests/unit/campaign/test_not_applicable.py",),
         "a campaign flashes a node of another platform instead of listing it not applicable"),
    Site("platform-unread-fits", "provision/spec/platforms.py",
         "        return identity is not None and any(p.fits(identity) for p in self.platforms)\n",
         "        return identity is None or any(p.fits(identity) for p in self.platforms)\n",
         ("tests/unit/redfish/test_platform_fit.py", "tests/unit/campaign/test_not_applicable.py"),
         "an image is sent to a node whose identity could not be read"),
    Site("platform-glob-substring", "provision/spec/platforms.py",
         "_compiled(pattern).match(str(value).strip().casefold()) is not None",
         "_compiled(pattern.strip('*') + '*').match(str(value).strip().casefold()) is not None",
         ("tests/unit/redfish/test_platform_fit.py",),
         "a platform pattern matches a prefix (SYS-821GE fits SYS-821GE-TNHR-X), not the whole model"),
    # -- versions by scheme (issues 38, 42) -----------------------------------------------------------------
    Site("version-drops-trailing-parts", "provision/spec/versions.py",
         "    ka, kb = ka + (0,) * (width - len(ka)), kb + (0,) * (width - len(kb))\n",
         "    ka, kb = ka[:min(len(ka), len(kb))], kb[:min(len(ka), len(kb))]\n",
         ("tests/unit/redfish/test_version_schemes.py",),
         "a compare that drops trailing parts instead of padding them: 2.1 equals 2.1.1, an older node at baseline"),
    Site("version-opaque-ordered", "provision/spec/versions.py",
         "        if not shared:\n            raise VersionsNotComparable(a, b, _why(a, b))\n",
         "        if not shared:\n            return (a > b) - (a < b)\n",
         ("tests/unit/redfish/test_version_schemes.py",),
         "two versions of no common scheme (a build id against 2.1) ordered as strings: 'newer', downgrade refused"),
    # -- firmware tasks (issue 42) --------------------------------------------------------------------------
    Site("task-completed-critical", "provision/redfish/resources/task.py",
         'return self.task_state == "Completed" and self.task_status in (None, "OK", "Warning")',
         'return self.task_state == "Completed"',
         (FW, RESOURCES), "a Task that ends Completed/Critical taken as a success (an OnReset staging journaled)"),
    Site("task-warning-failed", "provision/redfish/resources/task.py",
         'self.task_status in (None, "OK", "Warning")', 'self.task_status in (None, "OK")',
         (FW, RESOURCES), "a Task completed with warnings taken as a failure (the Task schema says success)"),
    Site("fw-monitor-blip-fails", "provision/redfish/ops/firmware.py",
         "            return None  # the BMC is restarting", "            raise  # the BMC is restarting",
         (f"{FW}::test_a_bmc_that_drops_out_while_its_task_runs_is_waited_out",),
         "a BMC that drops out while its update task is polled (it resets) fails the update"),
    Site("fw-verify-any-component", "provision/redfish/ops/firmware.py",
         'return rows if all(r.verdict == "ok" for r in rows) else None',
         'return rows if any(r.verdict == "ok" for r in rows) else None',
         (f"{FW}::test_verify_names_each_component_not_at_baseline",),
         "after an update, one component at baseline verifies all of them"),
    Site("fw-component-any-entry-ok", "provision/redfish/ops/firmware.py",
         'return next((v for v in worst if v in kinds), "ok")',
         'return "ok" if "ok" in kinds else next((v for v in worst if v in kinds), "ok")', (PLANS,),
         "a component with several entries (8 GPUs) is at baseline when one entry is"),
    Site("fw-absent-not-reported", "provision/redfish/ops/firmware.py",
         "        return absent + list(self.incomparable.values())", "        return list(self.incomparable.values())",
         FIRMWARE, "a baseline component the BMC does not list is not reported (could-not-check as a pass)"),
    Site("fw-downgrade-unrefused", "provision/redfish/ops/firmware.py",
         'if verdict == "newer" and not allow_downgrade:', 'if verdict == "newer" and allow_downgrade:', FIRMWARE,
         "a newer running version is downgraded without --allow-downgrade"),
    Site("fw-not-updateable-sent", "provision/redfish/ops/firmware.py",
         "matched = [e for e in matched if e.updateable is not False]", "matched = list(matched)", (PLANS,),
         "entries the BMC marks Updateable=false are sent an update too"),
    Site("converge-onreset-unverified", "provision/redfish/ops/converge.py",
         'if s.needs_host_reset or s.apply_time == "OnReset"]', "if s.needs_host_reset]",
         (f"{FW}::test_after_the_reset_every_staged_step_is_verified",),
         "firmware staged OnReset (without needs_host_reset) is not verified after the host reset"),
    Site("evidence-failed-task-staged", "provision/campaign/evidence.py",
         "        if not task.ok:\n            continue\n", "", FIRMWARE,
         "a failed update task that said AwaitToActivate counts its component as staged (never flashed again)"),
    Site("health-busy-ignored", "provision/campaign/redfish_updater.py",
         "                if state.busy:\n", "                if False:\n", UPDATER,
         "the campaign's conformance gate passes while an update task is still running"),
    Site("health-power-unknown-ok", "provision/campaign/redfish_updater.py",
         'if system.get("PowerState") != "On":', 'if system.get("PowerState") == "Off":', UPDATER,
         "the campaign's conformance gate passes a host whose power state is unknown or PoweringOn"),
    Site("health-version-unchecked", "provision/campaign/redfish_updater.py",
         "and state.versions.get(c.component) != c.version]",
         "and state.versions.get(c.component) not in (c.version, None)]", UPDATER,
         "the campaign's conformance gate passes a component whose version could not be read"),
    Site("health-missing-is-ok", "provision/campaign/redfish_updater.py",
         "        if health is None:\n", "        if health is None and False:\n", UPDATER,
         "the Redfish health gate passes a System, Manager or Chassis that reports no Status.Health"),
    # -- campaign gates and fencing (issue 42) -------------------------------------------------------------
    Site("gate-read-raises-healthy", "provision/campaign/gates.py",
         'problems.append(f"{target.name}: health check failed: {exc}")', "pass",
         (f"{ENGINE}::test_a_gate_without_health_evidence_halts_before_the_next_wave",),
         "a health gate whose BMC read raises counts as healthy"),
    Site("gate-mute-healthy", "provision/campaign/gates.py",
         'problems.append(f"{target.name}: unhealthy")', "pass",
         (f"{ENGINE}::test_a_gate_without_health_evidence_halts_before_the_next_wave",),
         "a gate result that is not ok but names no problem counts as healthy"),
    Site("shared-wave-done-unfenced", "provision/campaign/leader.py",
         'self.decide(f"wave {wave.wave} done", self.store.wave_state, name, wave.wave, WaveState.DONE, "ok")',
         '(self.store.wave_state(name, wave.wave, WaveState.DONE, "ok") or True)',
         (f"{FENCE}::test_a_stale_leader_closes_no_wave_after_another_took_over",),
         'the shared leader writes "wave done" outside its fenced decision'),
    Site("shared-gate-verdict-unfenced", "provision/campaign/leader.py",
         'self.decide(f"wave {wave.wave}\'s gate", failed)', "(failed(None) or True)",
         (f"{FENCE}::test_a_stale_leader_closes_no_wave_after_another_took_over",),
         "the shared leader writes a failed gate and its halt outside its fenced decision"),
    Site("shared-ungated-unreachable-passes", "provision/campaign/leader.py",
         'found = [f"{n.node}: not gated (its controller is gone and this one does not reach it)"]', "found = []",
         (SHARED_GATE,), "a node nobody gated, which the leader does not reach, passes the wave's gate"),
    Site("shared-ungated-skipped", "provision/campaign/leader.py", "            found = n.gate\n",
         "            found = n.gate or []\n", (SHARED_GATE,),
         "the leader takes a node nobody gated (its controller died) as gated without problems"),
    Site("shared-gate-failure-no-halt", "provision/campaign/leader.py",
         "                self.store.halt(name, reason, db=db)\n", "", (SHARED_GATE,),
         "a failed gate in a shared campaign marks the wave but leaves the campaign running"),
    Site("engine-late-nodes-ungated", "provision/campaign/leader.py",
         "                    found = self.gate.run([self.targets[n.node]], self.catalog)\n",
         "                    found = []\n",
         (f"{ENGINE}::test_a_node_done_before_a_crash_is_gated_on_resume",),
         "a node done before a crash (resumed) is never gated: the next wave starts without its health"),
    Site("claims-token-not-reread", "provision/journal/claims.py",
         'if row is None or row["token"] != self.term or row["owner"] != self.owner:', "if row is None:",
         (FENCE,), "a leader decision is written without re-reading the lease's token (another took it)"),
    Site("claims-fresh-to-the-end", "provision/journal/claims.py",
         "return self.term is not None and self.expires_at - self.clock() > self.ttl_s * FENCE_SHARE",
         "return self.term is not None and self.expires_at - self.clock() > 0", (FENCE,),
         "a leader decides until its lease's last instant (no margin for a pause or a clock ahead)"),
    # -- plain HTTP (issue 42) -----------------------------------------------------------------------------
    Site("ini-flag-truthy", "provision/spec/endpoints.py",
         'return str(value).strip().lower() in ("true", "yes", "1")', "return bool(value)",
         (PLAIN,), 'an INI "false" (a non-empty string) opts a host in to plain-HTTP BMC access'),
    Site("ini-flag-denylist", "provision/spec/endpoints.py",
         'return str(value).strip().lower() in ("true", "yes", "1")',
         'return str(value).strip().lower() not in ("false", "no", "0")',
         (PLAIN,), 'an INI "off" opts a host in to plain-HTTP BMC access'),
    Site("health-warning-ok", "provision/campaign/redfish_updater.py", 'elif health != "OK":',
         'elif health == "Critical":', UPDATER, "the campaign's Redfish health gate passes a System in Warning"),
    Site("health-rollup-ignored", "provision/campaign/redfish_updater.py",
         'health = status.get("HealthRollup") or status.get("Health")', 'health = status.get("Health")', UPDATER,
         "the Redfish health gate reads a chassis's own health, not the rollup of what it holds"),
    Site("plain-http-spec-unchecked", "provision/spec/fleet.py",
         "if self.plain_http and not self.insecure_http:", "if self.plain_http and self.insecure_http is None:",
         TRANSPORT, "the inventory takes a plain-HTTP BMC nobody opted in for (the rule's one place)"),
    Site("plain-http-warning-lost", "provision/redfish/ops/session.py", "    if opts.plain_http:\n",
         "    if opts.plain_http and not opts.insecure_http:\n", TRANSPORT,
         "an opted-in plain-HTTP BMC is used without the warning"),
    Site("tls-verify-inverted", "provision/redfish/ops/session.py", '"verify_tls": bmc.verify_tls and not insecure',
         '"verify_tls": bmc.verify_tls and insecure', TRANSPORT,
         "TLS certificates are verified only with --insecure (off by default)"),
    # -- verdicts and exit codes -------------------------------------------------------------------------
    Site("verdict-gather-error-ignored", "provision/conformance/model.py", "        if self.error is not None:\n",
         "        if False:\n", VERDICT, "a node whose facts could not be gathered passes (no results, no failure)"),
    Site("exit-error-is-ok", "provision/conformance/model.py",
         "    if outcome is Outcome.ERROR:\n        return EXIT_INCOMPLETE\n",
         "", VERDICT, "a check that could not be made exits 0"),
    Site("accepted-error", "provision/conformance/model.py",
         "ACCEPTED: frozenset[Outcome] = frozenset({Outcome.PASS, Outcome.WARN, Outcome.WAIVED})",
         "ACCEPTED: frozenset[Outcome] = frozenset({Outcome.PASS, Outcome.WARN, Outcome.WAIVED, Outcome.ERROR})",
         VERDICT, "an error (could not check) counts as conformant"),
    Site("severity-error-over-fail", "provision/conformance/model.py",
         "SEVERITY: tuple[Outcome, ...] = (Outcome.FAIL, Outcome.ERROR,",
         "SEVERITY: tuple[Outcome, ...] = (Outcome.ERROR, Outcome.FAIL,", VERDICT,
         "a run with a failure and an error exits 3 (incomplete) instead of 1"),
    Site("raise-for-incomplete-silent", "provision/cli/verify.py", "    if code == EXIT_INCOMPLETE:\n",
         "    if code == EXIT_INCOMPLETE and run.nodes[0].error:\n", VERDICT,
         "verify raises nothing (exit 0) when checks could not be made on reachable nodes"),
    Site("threshold-limit-fails", "provision/conformance/model.py",
         "return value > limit if self.above", "return value >= limit if self.above", (OUTCOMES,),
         "a reading at its limit fails (max_percentage_used 80 refuses 80)"),
    Site("threshold-below-limit-fails", "provision/conformance/model.py",
         "else value < limit", "else value <= limit", (OUTCOMES,), "an available spare at its threshold fails"),
    Site("cli-errors-exit-1", "provision/cli/__init__.py",
         "        return exc.exit_code\n    except KeyboardInterrupt:",
         "        return 1\n    except KeyboardInterrupt:", CLI,
         "every ProvisionError exits 1: bad input (2) and could-not-check (3) are not told apart"),
    Site("cli-bug-exits-0", "provision/cli/__init__.py",
         "            soft_wrap=True,\n        )\n        return 1\n",
         "            soft_wrap=True,\n        )\n        return 0\n", CLI, "an internal error (a bug) exits 0"),
    Site("cli-interrupt-exits-0", "provision/cli/__init__.py", "        return 130\n", "        return 0\n", CLI,
         "Ctrl-C exits 0, as if the command had done its work"),
    # -- secrets in logs ------------------------------------------------------------------------------------
    Site("redact-password-to-first-space", "provision/redact.py",
         """re.compile(r\"\"\"(?i)(["']?password["']?\\s*[:=]\\s*(["']))(?:\\\\.|(?!\\2).)*\"\"\"),""",
         """re.compile(r\"\"\"(?i)(["']?password["']?\\s*[:=]\\s*(["']))[^\\s"',}]*\"\"\"),""",
         REDACTION, "an unregistered quoted password is masked only up to its first space or comma"),
    Site("redact-password-json-quotes-only", "provision/redact.py",
         """re.compile(r\"\"\"(?i)(["']?password["']?\\s*[:=]\\s*(["']))(?:\\\\.|(?!\\2).)*\"\"\"),""",
         """re.compile(r\"\"\"(?i)("?password"?\\s*[:=]\\s*("))(?:\\\\.|(?!\\2).)*\"\"\"),""",
         REDACTION, "a password in a Python dict's repr ('Password': 'x') is logged in clear"),
    Site("redact-short-secrets-kept", "provision/redact.py", "if value and len(value) >= 3:",
         "if value and len(value) > 3:", REDACTION, "a three-character password is not scrubbed"),
    Site("redact-shortest-first", "provision/redact.py", "key=len, reverse=True)", "key=len)",
         REDACTION, "a secret that contains another is masked only in part (the shorter one first)"),
    # -- the hollow assertions made real (issue 42) --------------------------------------------------------
    Site("digest-counts-pyc", "provision/ansible/inputs.py", ' and path.suffix != ".pyc"', "",
         (DIGEST,), "a stray .pyc changes the Ansible content digest (every host reconfigured)"),
    Site("digest-counts-pycache", "provision/ansible/inputs.py",
         '_SKIP_PARTS = frozenset({"__pycache__", ".git"})', '_SKIP_PARTS = frozenset({".git"})',
         (DIGEST,), "what Python leaves in __pycache__ changes the Ansible content digest"),
    Site("digest-ignores-paths", "provision/ansible/inputs.py",
         'digest.update(f"{rel}\\0{int(executable)}\\0".encode())',
         'digest.update(f"{int(executable)}\\0".encode())',
         (DIGEST,), "a renamed role file leaves the Ansible content digest unchanged"),
    Site("resource-uri-rewritten", "provision/redfish/resources/base.py",
         '        return v.rstrip("/")', '        return v.rstrip("/").lower()',
         (SEEDS,), "a parsed resource's @odata.id is not the one the BMC gave"),
    Site("catalog-any-scheme-is-url", "provision/campaign/catalog.py",
         'return self.image.startswith(("http://", "https://"))', 'return "://" in self.image',
         (CATALOG,), "an ftp:// (or any) image is taken as the BMC's to fetch, its sha256 never checked"),
    Site("catalog-http-is-local", "provision/campaign/catalog.py",
         'return self.image.startswith(("http://", "https://"))', 'return self.image.startswith("https://")',
         (CATALOG,), "an http:// image URL is taken as a local file and refused"),
    # -- identity: a node is what its BMC says it is (issue 38) ----------------------------------------------
    Site("update-skips-fit-check", "provision/campaign/redfish_updater.py",
         "                _refuse_unfit(node, flash, node_identity(node, flash, self._identity(target)))\n", "",
         (NOT_APPLICABLE,), "a campaign flashes an image onto a board swapped since its plan (another platform)"),
    Site("verify-platform-unjudged", "provision/conformance/checks/bmc.py",
         "ok = compute and ctx.spec.described_platforms.fits(found)", "ok = compute",
         (PLATFORM_CHECK,), "verify passes a node on a board the profile does not describe"),
    Site("identity-placeholder-serial", "provision/redfish/ops/identity.py", "    return real_text(value)\n",
         "    return value.strip() or None if isinstance(value, str) else None\n",
         (PLACEHOLDER,), "two boards that both report serial N/A read as the same board"),
    # -- counting by identity, discovery bounds (issues 38, 39) ----------------------------------------------
    Site("drive-absent-counted", "provision/redfish/ops/counting.py",
         "        if not d.present or d.removable_media:\n", "        if d.removable_media:\n",
         ("tests/unit/redfish/test_counting_by_identity.py",),
         "an empty drive bay (Status.State Absent) is counted as a drive"),
    Site("drive-counted-per-uri", "provision/redfish/ops/counting.py",
         "        out.setdefault(d.identity or (\"uri\", d.uri), d)\n", "        out.setdefault((\"uri\", d.uri), d)\n",
         ("tests/unit/redfish/test_counting_by_identity.py",),
         "a drive listed under Storage and under Chassis counts twice (by URI, not by serial)"),
    Site("psu-serial-ignored", "provision/redfish/ops/counting.py",
         "        if k is not None and k in keys:\n            continue\n", "",
         ("tests/unit/redfish/test_counting_by_identity.py",),
         "a PSU listed in Power and PowerSubsystem with one serial counts twice"),
    Site("discover-max-not-enforced", "provision/discover/targets.py",
         "    if total > max_addresses:\n", "    if total > max_addresses * 2:\n",
         ("tests/unit/discover/test_discover_input.py",),
         "an address range larger than --max is probed anyway"),
)


@dataclass
class Result:
    site: Site
    verdict: str
    seconds: float
    tail: str = ""


def source_files(root: Path) -> list[str]:
    """What git tracks, and what it would track (untracked, not ignored), as it is in the working tree now."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         check=True, capture_output=True).stdout.decode()
    return sorted({p for p in out.split("\0") if p and (root / p).is_file() and not (root / p).is_symlink()})


def copy_tree(root: Path, dest: Path) -> None:
    for rel in source_files(root):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target)


def apply(site: Site, text: str) -> str:
    """The file's text with the mutant in; ValueError unless the original occurs exactly once."""
    found = text.count(site.original)
    if found != 1:
        raise ValueError(f"{site.name}: {site.file} holds its original snippet {found} times, not once")
    return text.replace(site.original, site.mutant)


def run_tests(copy: Path, tests: tuple[str, ...], timeout_s: float) -> tuple[int | None, str]:
    """pytest over `tests` in the copy: (its exit status, None on timeout; the tail of its output)."""
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-x", "-m", MARKERS, *tests]
    try:
        proc = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, ""
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    return proc.returncode, "\n".join(lines[-3:])


def verdict_of(code: int | None) -> str:
    if code is None:
        return "killed (timeout)"
    if code in (1, 2):  # tests failed, or collection failed (the mutant broke an import)
        return "killed"
    if code == 0:
        return "survived"
    return "error"  # 3, 4, 5: internal error, usage error, nothing collected


def check_site(copy: Path, site: Site, timeout_s: float) -> Result:
    path = copy / site.file
    original = path.read_text()
    started = time.monotonic()
    try:
        path.write_text(apply(site, original))
        code, tail = run_tests(copy, site.tests, timeout_s)
    finally:
        path.write_text(original)
    return Result(site, verdict_of(code), time.monotonic() - started, tail)


def select(only: list[str]) -> list[Site]:
    names = [n for group in only for n in group.split(",") if n]
    if not names:
        return list(SITES)
    known = {s.name: s for s in SITES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown site(s): {', '.join(unknown)}; --list shows them")
    return [known[n] for n in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="run this site only")
    parser.add_argument("--list", action="store_true", help="list the sites and exit")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per site's tests (default 300)")
    args = parser.parse_args(argv)
    sites = select(args.only)
    if args.list:
        for site in sites:
            print(f"{site.name:32} {site.file}: {site.bug}")
        return 0
    with tempfile.TemporaryDirectory(prefix="provision-mutants-") as tmp:
        copy = Path(tmp)
        copy_tree(ROOT, copy)
        for site in sites:  # every site must apply before anything runs
            apply(site, (copy / site.file).read_text())
        selection = tuple(dict.fromkeys(t for s in sites for t in s.tests))
        print(f"baseline: {len(selection)} test selection(s) on the unmutated copy ...", flush=True)
        code, tail = run_tests(copy, selection, args.timeout * 2)
        if code != 0:
            print(f"the tests fail without any mutant (exit {code}); fix that first:\n{tail}")
            return 2
        results = []
        for site in sites:
            result = check_site(copy, site, args.timeout)
            results.append(result)
            print(f"{result.verdict:17} {site.name:32} {result.seconds:6.1f}s  {site.bug}", flush=True)
            if result.verdict == "error":
                print(f"    {result.tail}")
    survived = [r for r in results if r.verdict == "survived"]
    errors = [r for r in results if r.verdict == "error"]
    killed = len(results) - len(survived) - len(errors)
    print(f"\n{killed} killed, {len(survived)} survived, {len(errors)} error(s) of {len(results)} mutant(s)")
    for r in survived:
        print(f"  survived: {r.site.name} ({r.site.file}): {r.site.bug}")
    return 2 if errors else 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
