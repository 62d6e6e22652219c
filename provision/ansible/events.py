"""Pure mapping from ansible-runner event dicts to typed changes, failures and progress events."""

from __future__ import annotations

import difflib
from typing import Any, Literal

from provision.ansible.models import Change, Failure, ProgressEvent
from provision.redact import mask

_RESULT_KINDS = {
    "runner_on_ok": "ok",
    "runner_on_failed": "failed",
    "runner_on_unreachable": "unreachable",
    "runner_on_skipped": "skipped",
}
_MAX_MSG = 400


def progress(event: dict[str, Any]) -> ProgressEvent | None:
    """A progress event for the display, or None for events it does not show."""
    name = event.get("event", "")
    data = event.get("event_data") or {}
    if name == "playbook_on_play_start":
        return ProgressEvent(kind="play", name=str(data.get("play", "")))
    if name == "playbook_on_task_start":
        return ProgressEvent(kind="task", name=str(data.get("task", "")))
    kind = _RESULT_KINDS.get(name)
    if kind is None:
        return None
    if kind == "ok" and (data.get("res") or {}).get("changed"):
        kind = "changed"
    if kind == "failed" and data.get("ignore_errors"):
        kind = "ok"
    return ProgressEvent(kind=kind, name=str(data.get("task", "")), host=data.get("host"))


def change(event: dict[str, Any]) -> Change | None:
    """The change an `runner_on_ok` event reports, with its diff, or None."""
    if event.get("event") != "runner_on_ok":
        return None
    data = event.get("event_data") or {}
    res = data.get("res") or {}
    if not res.get("changed"):
        return None
    diffs = [res.get("diff")] + [item.get("diff") for item in res.get("results") or [] if item.get("changed")]
    text = "".join(render_diff(d) for d in diffs if d)
    if not text and str(data.get("task_action", "")).endswith("debug") and isinstance(res.get("msg"), str):
        text = res["msg"] + "\n"  # what a check-mode report task says would be done
    return Change(host=str(data.get("host", "")), task=str(data.get("task", "")), diff=text)


def failure(event: dict[str, Any], secrets: tuple[str, ...] = ()) -> Failure | None:
    """The failure a `runner_on_failed`/`runner_on_unreachable` event reports, or None."""
    name = event.get("event")
    data = event.get("event_data") or {}
    if name not in ("runner_on_failed", "runner_on_unreachable") or data.get("ignore_errors"):
        return None
    res = data.get("res") or {}
    return Failure(
        host=str(data.get("host", "")),
        task=str(data.get("task", "")),
        msg=mask(result_message(res), secrets),
        unreachable=name == "runner_on_unreachable",
    )


def result_message(res: dict[str, Any]) -> str:
    """The most useful one-line message of a failed result (loops: the first failed item)."""
    if res.get("_ansible_no_log"):
        return "(output hidden by no_log)"
    msg = res.get("msg") or ""
    if not msg or msg.startswith("One or more items failed"):
        for item in res.get("results") or []:
            if item.get("failed"):
                return result_message(item)
    if not msg:
        msg = res.get("stderr") or res.get("stdout") or "failed without a message"
    text = " ".join(str(msg).split())
    return text if len(text) <= _MAX_MSG else text[: _MAX_MSG - 3] + "..."


def render_diff(diff: Any) -> str:
    """A unified diff from Ansible's diff structure (a dict, or a list of dicts)."""
    if isinstance(diff, list):
        return "".join(render_diff(d) for d in diff)
    if not isinstance(diff, dict):
        return ""
    if "prepared" in diff:
        return str(diff["prepared"]).rstrip("\n") + "\n"
    before, after = diff.get("before", ""), diff.get("after", "")
    if not isinstance(before, str) or not isinstance(after, str):
        before, after = _as_text(before), _as_text(after)
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=str(diff.get("before_header", "before")),
        tofile=str(diff.get("after_header", "after")),
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _as_text(value: Any) -> str:
    if isinstance(value, dict):
        return "".join(f"{k}: {v}\n" for k, v in sorted(value.items()))
    return "" if value is None else f"{value}\n"


# Modules whose result names a file the role manages or reads, and the key that names it.
_FILE_KEYS = {
    "template": ("dest",), "copy": ("dest",), "get_url": ("dest",), "file": ("path", "dest"),
    "lineinfile": ("path", "dest"), "blockinfile": ("path", "dest"), "ini_file": ("path", "dest"),
    "replace": ("path", "dest"), "stat": ("path",), "slurp": ("src", "path"),
}
_SERVICE_MODULES = frozenset({"systemd_service", "systemd", "service"})


ManagedKind = Literal["file", "service"]


def managed(event: dict[str, Any]) -> list[tuple[ManagedKind, str]]:
    """What a successful task result says the run manages on its host: ("file", path) and ("service", name).

    Read from the module's own arguments as the result reports them (`invocation.module_args`, every loop
    item's too), so the list follows the roles without naming any of them. Empty for other events."""
    if event.get("event") != "runner_on_ok":
        return []
    data = event.get("event_data") or {}
    module = str(data.get("task_action", "")).rsplit(".", 1)[-1]
    res = data.get("res") or {}
    found: list[tuple[ManagedKind, str]] = []
    for item in [res, *(res.get("results") or [])]:
        if not isinstance(item, dict):
            continue
        args = (item.get("invocation") or {}).get("module_args") or {}
        if module in _FILE_KEYS:
            value = next((args.get(k) for k in _FILE_KEYS[module] if args.get(k)), None)
            if isinstance(value, str) and value.startswith("/"):
                found.append(("file", value))
        elif module in _SERVICE_MODULES and isinstance(args.get("name"), str) and args["name"]:
            found.append(("service", args["name"]))
    return found
