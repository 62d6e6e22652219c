"""Redfish error bodies and message objects from the DMTF Base and Update registries."""

from __future__ import annotations

from typing import Any

BASE = "Base.1.8"
UPDATE = "Update.1.0"

_TEXT: dict[str, str] = {
    "Success": "The request completed successfully.",
    "GeneralError": "A general error has occurred. See Resolution for information on how to resolve the error.",
    "ResourceMissingAtURI": "The resource at the URI '%1' was not found.",
    "PropertyUnknown": "The property %1 is not in the list of valid properties for the resource.",
    "PropertyNotWritable": "The property %1 is a read only property and cannot be assigned a value.",
    "PropertyValueTypeError": "The value '%1' for the property %2 is not a type that the property can accept.",
    "PropertyValueNotInList": "The value '%1' for the property %2 is not in the list of acceptable values.",
    "PropertyValueOutOfRange": "The value '%1' for the property %2 is not in the supported range of acceptable values.",
    "PropertyMissing": "The property %1 is a required property and must be included in the request.",
    "ActionParameterMissing": "The action %1 requires the parameter %2 to be present in the request body.",
    "ActionParameterNotSupported": "The parameter %1 for the action %2 is not supported on the target resource.",
    "ActionParameterValueNotInList": "The value '%1' for the parameter %2 in the action %3 is not in the list "
    "of acceptable values.",
    "ActionNotSupported": "The action %1 is not supported by the resource.",
    "OperationNotAllowed": "The HTTP method is not allowed on this resource.",
    "MalformedJSON": "The request body submitted was malformed JSON and could not be parsed by the receiving service.",
    "NoValidSession": "There is no valid session established with the implementation.",
    "InsufficientPrivilege": "There are insufficient privileges for the account or credentials associated "
    "with the current session to perform the requested operation.",
    "PreconditionFailed": "The ETag supplied did not match the ETag required to change this resource.",
    "ServiceTemporarilyUnavailable": "The service is temporarily unavailable.  Retry in %1 seconds.",
    "ResourceInUse": "The change to the requested resource failed because the resource is in use or in transition.",
    "Created": "The resource was created successfully.",
    "TaskStarted": "The task with Id '%1' has started.",
    "TaskCompletedOK": "The task with Id '%1' has completed.",
    "TaskAborted": "The task with Id '%1' has been aborted.",
    "UpdateSuccessful": "Device '%1' successfully updated with image '%2'.",
    "AwaitToActivate": "Awaiting for an action to proceed with activating image '%1' on '%2'.",
    "ApplyFailed": "Installation of image '%1' to '%2' failed.",
    "TransferFailed": "Transfer of image '%1' to '%2' failed.",
    "UpdateInProgress": "An update is in progress.",
    "PasswordChangeRequired": "The password provided for this account must be changed before access is granted.  "
    "PATCH the Password property for this account located at the target URI '%1' to complete this process.",
    "PropertyValueFormatError": "The value '%1' for the property %2 is of a different format than the property "
    "can accept.",
    "ResourceAlreadyExists": "The requested resource of type %1 with the property %2 with the value '%3' already "
    "exists.",
    "CreateFailedMissingReqProperties": "The create operation failed because the required property %1 was missing "
    "from the request.",
    "ResourceCannotBeDeleted": "The delete request failed because the resource requested cannot be deleted.",
    "ActionParameterValueFormatError": "The value '%1' for the parameter %2 in the action %3 is of a different "
    "format than the parameter can accept.",
    "InternalError": "The request failed due to an internal service error.  The service is still operational.",
}

_SEVERITY_WARNING = {"PropertyUnknown", "PropertyNotWritable", "PropertyValueTypeError",
                     "PropertyValueNotInList", "PropertyValueOutOfRange", "ActionParameterMissing",
                     "ActionParameterNotSupported", "ActionParameterValueNotInList", "PreconditionFailed",
                     "PropertyValueFormatError", "ActionParameterValueFormatError"}
_CRITICAL = {"GeneralError", "ApplyFailed", "TransferFailed", "TaskAborted", "PasswordChangeRequired",
             "ResourceAlreadyExists", "CreateFailedMissingReqProperties", "ResourceCannotBeDeleted", "InternalError",
             "InsufficientPrivilege"}
_UPDATE_IDS = {"UpdateSuccessful", "AwaitToActivate", "ApplyFailed", "TransferFailed", "UpdateInProgress"}
_TASK_IDS = {"TaskStarted", "TaskCompletedOK", "TaskAborted"}


def message(key: str, *args: Any, related: list[str] | None = None, resolution: str = "None.") -> dict[str, Any]:
    """One Message object (MessageId, Message with args substituted, Severity, MessageArgs)."""
    text = _TEXT[key]
    for i, arg in enumerate(args, start=1):
        text = text.replace(f"%{i}", str(arg))
    if key in _UPDATE_IDS:
        prefix = UPDATE
    elif key in _TASK_IDS:
        prefix = "TaskEvent.1.0"
    else:
        prefix = BASE
    critical = key in _CRITICAL
    severity = "Critical" if critical else "Warning" if key in _SEVERITY_WARNING else "OK"
    msg: dict[str, Any] = {
        "@odata.type": "#Message.v1_1_1.Message",
        "MessageId": f"{prefix}.{key}",
        "Message": text,
        "MessageArgs": [str(a) for a in args],
        "MessageSeverity": severity,
        "Severity": severity,
        "Resolution": resolution,
    }
    if related:
        msg["RelatedProperties"] = related
    return msg


def error_body(key: str, *args: Any, related: list[str] | None = None,
               extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A Redfish error response body whose code is the first message's id."""
    first = message(key, *args, related=related)
    infos = [first, *(extra or [])]
    return {"error": {"code": first["MessageId"], "message": first["Message"],
                      "@Message.ExtendedInfo": infos}}
