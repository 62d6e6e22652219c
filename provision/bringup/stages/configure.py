"""The configure stage: site.yml through ansible-runner, and a converged re-run that skips check mode soundly.

A check-mode run of site.yml costs tens of seconds per node. It is skipped only on evidence, all of it:
the journal holds the record of a successful apply of site.yml to this node (written after the run, deleted
before each apply), the digest of site.yml's inputs now equals the one recorded then (roles, playbooks, the
host's variables, versions: provision.ansible.inputs), and one round trip to the node finds the fingerprint of
what that run managed unchanged (provision.ansible.fingerprint) and verify's quick node checks passing. A
probe that could not be made, a missing record, any difference, or `--recheck` runs check mode as before.
`shortcut_refused` is that decision, pure and table-tested; `plan` is a pure function of what was observed.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from provision.ansible import fingerprint as fp
from provision.ansible.inputs import HostVariables, content_digest, inputs_digest
from provision.ansible.models import PlayResult, RunOptions
from provision.ansible.project import project_dir
from provision.ansible.runner import PlayFailed, run_playbook
from provision.bringup.model import Action, StagePlan
from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.conformance.facts import NodeFacts, gather
from provision.conformance.model import Level, Outcome
from provision.conformance.runner import evaluate, node_probes, ssh_runner_for
from provision.errors import ProvisionError
from provision.journal.configured import ConfiguredRecord, configured, forget_configured, record_configured
from provision.spec import HostEntry


class NodeProbe(BaseModel):
    """One round trip to the node: the fingerprint of what the last apply managed, and the quick checks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fingerprint: str = ""
    error: str = ""  # the probe could not be made, or a fingerprint probe failed: never "converged"
    failing: tuple[str, ...] = ()  # quick checks that failed or could not be made
    passed: int = 0


class RecordAction(Action):
    """Bookkeeping after check mode found nothing to change: record the evidence for the next run's shortcut."""

    kind: str = "record"
    target: str = "site.yml"
    after: str = "the inputs' digest and the node's fingerprint, for the next run"
    changes_node: bool = False
    digest: str
    manifest: dict[str, list[str]]


class ConfigureObserved(BaseModel):
    """Everything the configure plan is made from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    configured_before: bool = True  # the journal has a successful ansible run of this stage on the node
    recheck: bool = False
    digest: str = ""
    digest_error: str = ""
    record: ConfiguredRecord | None = None
    probe: NodeProbe | None = None
    check: PlayResult | None = None  # a check-mode run, made when the shortcut was refused
    check_error: str = ""


def shortcut_refused(seen: ConfigureObserved) -> str | None:
    """Why check mode must run (pure), or None when the evidence says the node still matches site.yml."""
    before = refused_before_probe(seen)
    if before is not None:
        return before
    assert seen.record is not None
    if seen.probe is None:
        return "the node was not probed"
    if seen.probe.error:
        return f"the node probe could not be made: {seen.probe.error}"
    if seen.probe.failing:
        return f"{len(seen.probe.failing)} quick check(s) do not pass: {', '.join(seen.probe.failing[:5])}"
    if seen.probe.fingerprint != seen.record.fingerprint:
        return f"the node changed since run {seen.record.run_id} (a managed file, package or service)"
    return None


def refused_before_probe(seen: ConfigureObserved) -> str | None:
    """Why check mode must run whatever the node says (pure): the node is probed only when this is None."""
    if seen.recheck:
        return "--recheck given"
    if seen.digest_error or not seen.digest:
        return f"inputs could not be digested: {seen.digest_error or 'no digest'}"
    if seen.record is None:
        return "no record of a successful apply of site.yml in the journal"
    if seen.record.digest != seen.digest:
        return f"site.yml's inputs changed since run {seen.record.run_id} (roles, variables or versions)"
    return None


def _merged(host: str, observed: ConfigureObserved) -> dict[str, list[str]]:
    """What check mode saw managed, and what the last apply managed (tasks check mode skips name nothing)."""
    assert observed.check is not None
    now = observed.check.manifest(host)
    before = observed.record.manifest if observed.record is not None else {}
    return {kind: sorted(set(names) | set(before.get(kind, ()))) for kind, names in now.items()}


def quick_failing(host: HostEntry, facts: NodeFacts) -> tuple[tuple[str, ...], int]:
    """Verify's quick node checks on facts already gathered (pure): the ids that fail or error, and passes."""
    ctx = evaluate(host.name, host.spec, facts, Level.QUICK, host.lab)
    bad = tuple(r.id for r in ctx.results if r.outcome in (Outcome.FAIL, Outcome.ERROR))
    good = sum(1 for r in ctx.results if r.outcome not in (Outcome.FAIL, Outcome.ERROR))
    return bad, good


class ConfigureStage:
    """site.yml through ansible-runner; a converged node plans nothing (see the module's docstring)."""

    name = "configure"

    def __init__(self, opts: BringupOptions) -> None:
        self.opts = opts
        self._variables = HostVariables(opts.inventory)  # the inventory read once per run, for every node

    def _options(self, host: HostEntry, check: bool) -> RunOptions:
        return RunOptions(playbook="site.yml", inventory=self.opts.inventory, limit=(host.name,), check=check,
                          forks=self.opts.forks, strategy=self.opts.strategy)

    # -- observe ------------------------------------------------------------------------------------
    def observe(self, ctx: StageContext) -> ConfigureObserved:
        """Read-only: the journal's record, the inputs' digest, one node probe, check mode if still needed."""
        host, journal = ctx.host, ctx.journal
        if journal is not None and not any(
            a.action == "ansible" and a.outcome == "ok" for a in journal.actions(host.name, self.name)
        ):
            return ConfigureObserved(configured_before=False)
        digest, digest_error = self._digest(host)
        seen = ConfigureObserved(recheck=self.opts.recheck, digest=digest, digest_error=digest_error,
                                 record=configured(journal, host.name) if journal is not None else None)
        if refused_before_probe(seen) is None:  # all else holds: the node decides
            seen = seen.model_copy(update={"probe": self._probe(host, seen.record)})
        if shortcut_refused(seen) is None:
            return seen
        ctx.say(self.name, "check mode")
        try:
            return seen.model_copy(update={"check": run_playbook(self._options(host, check=True))})
        except PlayFailed as exc:  # e.g. a task that needs a package the run would install first
            return seen.model_copy(update={"check_error": str(exc)})

    def _digest(self, host: HostEntry) -> tuple[str, str]:
        try:
            return inputs_digest(self._variables.of(host.name), content_digest(project_dir())), ""
        except (ProvisionError, OSError) as exc:
            return "", str(exc)

    def _probe(self, host: HostEntry, record: ConfiguredRecord | None) -> NodeProbe:
        manifest = record.manifest if record is not None else {}
        try:
            facts = gather(host.name, [*fp.probes(manifest), *node_probes(host.spec, Level.QUICK)],
                           ssh_runner_for(Level.QUICK)(host))
            failing, passed = quick_failing(host, facts)
            return NodeProbe(fingerprint=fp.fingerprint(facts, manifest), failing=failing, passed=passed)
        except (ProvisionError, fp.FingerprintUnavailable) as exc:  # unreachable, host key, script died, ...
            return NodeProbe(error=str(exc))

    # -- plan -----------------------------------------------------------------------------------------
    def plan(self, host: HostEntry, observed: ConfigureObserved) -> StagePlan:
        if not observed.configured_before:
            return self._full(host, "never configured by provision: a full run of site.yml")
        refused = shortcut_refused(observed)
        if refused is None:
            assert observed.record is not None and observed.probe is not None
            note = (f"unchanged since run {observed.record.run_id}: same inputs, node fingerprint "
                    f"matches, {observed.probe.passed} quick checks without a failure (--recheck runs check mode)")
            return StagePlan(stage=self.name, node=host.name, note=note)
        if observed.check_error:
            return self._full(host, f"{refused}; check mode could not predict the run: {observed.check_error}")
        if observed.check is None:
            raise ProvisionError(f"{host.name}: configure: check mode is needed ({refused}) and was not run")
        changes = [c for c in observed.check.changes if c.host == host.name]
        actions: tuple[Action, ...] = tuple(Action(kind="ansible", target=c.task) for c in changes)
        if not actions and observed.digest:  # converged by check mode: keep the evidence, or it is paid again
            actions = (RecordAction(digest=observed.digest, manifest=_merged(host.name, observed)),)
        found = "changes planned" if changes else "OS matches site.yml"
        return StagePlan(stage=self.name, node=host.name, actions=actions, note=f"check mode ({refused}): {found}")

    def _record(self, ctx: StageContext, digest: str, manifest: dict[str, list[str]]) -> None:
        if ctx.journal is None or not digest:
            return
        probe = self._probe_fingerprint(ctx.host, manifest)
        if probe.error:
            ctx.say(self.name, f"no record for the next run's shortcut: {probe.error}")
            return
        record_configured(ctx.journal, ctx.host.name, ctx.run_id, digest, manifest, probe.fingerprint)

    def _full(self, host: HostEntry, note: str) -> StagePlan:
        return StagePlan(stage=self.name, node=host.name,
                         actions=(Action(kind="ansible", target="site.yml", after="full run"),), note=note)

    # -- apply ----------------------------------------------------------------------------------------
    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        """Run site.yml; after it succeeded, record its inputs' digest, manifest and the node's fingerprint."""
        host = ctx.host
        if all(isinstance(a, RecordAction) for a in plan.actions):  # bookkeeping only: nothing is run
            for action in plan.actions:
                assert isinstance(action, RecordAction)
                self._record(ctx, action.digest, action.manifest)
            return
        digest, _ = self._digest(host)  # taken before the run: an edit during it shows as a change next time
        if ctx.journal is not None:
            forget_configured(ctx.journal, host.name)  # a failed or killed run leaves no record
        summary = Action(kind="ansible", target="site.yml", after=f"{len(plan.actions)} change(s) planned")
        result: PlayResult = ctx.side_effect(self.name, summary,
                                             lambda: run_playbook(self._options(host, check=False)))
        self._record(ctx, digest, result.manifest(host.name))

    def _probe_fingerprint(self, host: HostEntry, manifest: dict[str, list[str]]) -> NodeProbe:
        try:
            facts = gather(host.name, fp.probes(manifest), ssh_runner_for(Level.QUICK)(host))
            return NodeProbe(fingerprint=fp.fingerprint(facts, manifest))
        except (ProvisionError, fp.FingerprintUnavailable) as exc:
            return NodeProbe(error=str(exc))
