"""What a BMC says it accepts: `@Redfish.AllowableValues`, `@Redfish.ActionInfo` and
`@Redfish.OperationApplyTimeSupport` (DMTF DSP0266 "Allowable values", "Action info annotation",
"Operation apply time"; Settings schema `OperationApplyTimeSupport`).

Captures: the GH200, Supermicro HGX and Lenovo XCC ComputerSystem.Reset actions point at a
ResetActionInfo; HPE iLO 5 and Lenovo list ResetType@Redfish.AllowableValues inline; the GH200 UpdateService
says MultipartHttpPushUri@Redfish.OperationApplyTimeSupport: Immediate only.
"""

from __future__ import annotations

from typing import Any, Protocol

from provision.redfish.errors import RedfishBadRequest
from provision.redfish.resources.firmware import UpdateService

Json = dict[str, Any]


class Reader(Protocol):
    def get_optional(self, uri: str) -> Json | None: ...


def inline(obj: Any, prop: str) -> tuple[str, ...]:
    """`prop@Redfish.AllowableValues` of `obj`; () when the BMC does not say."""
    values = obj.get(f"{prop}@Redfish.AllowableValues") if isinstance(obj, dict) else None
    return tuple(str(v) for v in values) if isinstance(values, list) else ()


def action_values(conn: Reader, action: Any, param: str) -> tuple[str, ...]:
    """What an action accepts for `param`: its inline AllowableValues, else the AllowableValues of that
    parameter in the action's ActionInfo resource (read once here); () when neither says (an ActionInfo
    that cannot be read is recorded by the connector and says nothing)."""
    listed = inline(action, param)
    if listed or not isinstance(action, dict):
        return listed
    info_uri = action.get("@Redfish.ActionInfo")
    if not isinstance(info_uri, str) or not info_uri:
        return ()
    info = conn.get_optional(info_uri) or {}
    for p in info.get("Parameters") or []:
        if isinstance(p, dict) and p.get("Name") == param and isinstance(p.get("AllowableValues"), list):
            return tuple(str(v) for v in p["AllowableValues"])
    return ()


def offered(wanted: str, allowed: tuple[str, ...], what: str, where: str) -> str:
    """`wanted` in the BMC's own spelling (matched without regard to case); itself when the BMC does not
    say; a one-line RedfishBadRequest listing what it offers when it is not offered."""
    if not allowed:
        return wanted
    for value in allowed:
        if value.lower() == wanted.lower():
            return value
    raise RedfishBadRequest(f"{where}: {what} {wanted!r} is not offered by the BMC (it offers {list(allowed)})")


def apply_times(obj: Any, prop: str | None = None) -> tuple[str, ...]:
    """SupportedValues of `@Redfish.OperationApplyTimeSupport` on an action object (prop None) or of
    `prop@Redfish.OperationApplyTimeSupport` (e.g. MultipartHttpPushUri) on a resource; () when absent."""
    if not isinstance(obj, dict):
        return ()
    key = f"{prop}@Redfish.OperationApplyTimeSupport" if prop else "@Redfish.OperationApplyTimeSupport"
    return supported_values(obj.get(key))


def supported_values(support: Any) -> tuple[str, ...]:
    """SupportedValues of one OperationApplyTimeSupport object (Settings schema); () when absent."""
    values = support.get("SupportedValues") if isinstance(support, dict) else None
    return tuple(str(v) for v in values) if isinstance(values, list) else ()


# The apply times a baseline may leave to the BMC, in the order preferred: OnReset keeps the host on its
# running firmware until the one planned reset; Immediate where that is all the BMC offers (the GH200's
# multipart push).
PREFERRED_APPLY_TIMES = ("OnReset", "Immediate")


def apply_time(wanted: str | None, supported: tuple[str, ...], where: str) -> str:
    """The `@Redfish.OperationApplyTime` to send. `wanted` given: itself when the BMC supports it or does not
    say, otherwise a one-line error listing what it supports (an asked-for apply time is never silently
    changed: OnReset and Immediate differ in when the host sees the new firmware). `wanted` None (the
    baseline leaves it to the BMC): the first of PREFERRED_APPLY_TIMES the BMC offers, OnReset when it does
    not say; a one-line error when it offers none of them."""
    if wanted is not None:
        return offered(wanted, supported, "apply time", where)
    if not supported:
        return PREFERRED_APPLY_TIMES[0]
    for preferred in PREFERRED_APPLY_TIMES:
        for value in supported:
            if value.lower() == preferred.lower():
                return value
    raise RedfishBadRequest(f"{where}: the BMC offers no apply time provision uses (it offers {list(supported)}; "
                            f"wanted one of {list(PREFERRED_APPLY_TIMES)})")


def update_apply_times(service: UpdateService, method: str) -> tuple[str, ...]:
    """What the BMC supports as `@Redfish.OperationApplyTime` for a firmware update made by `method`
    (UpdateService schema, DSP0266 "Operation apply time"): "multipart" by
    MultipartHttpPushUri@Redfish.OperationApplyTimeSupport (the UpdateParameters part carries the apply
    time), "simple" by the #UpdateService.SimpleUpdate action's @Redfish.OperationApplyTimeSupport; ()
    when the BMC does not say (HPE iLO 5, Lenovo XCC and Supermicro captures), and then the spec's value
    is sent as it is."""
    if method == "multipart":
        return supported_values(service.multipart_apply_time_support)
    return apply_times(service.actions.get("#UpdateService.SimpleUpdate"))


def update_apply_time(service: UpdateService, method: str, wanted: str | None, where: str) -> str:
    """The `@Redfish.OperationApplyTime` to send with a firmware update made by `method` (see
    update_apply_times), in the BMC's spelling; a one-line RedfishBadRequest naming `where` when the BMC
    does not offer `wanted` (never changed silently). `wanted` None: the BMC's choice (apply_time)."""
    return apply_time(wanted, update_apply_times(service, method), where)
