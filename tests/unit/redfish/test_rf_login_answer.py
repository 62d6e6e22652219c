"""Reading a session login answer on the connector's own pool: the DMTF library's results and errors."""

from __future__ import annotations

from typing import Any

import pytest
from redfish.rest.v1 import InvalidCredentialsError, RedfishPasswordChangeRequiredError, SessionCreationError

from provision.redfish.connector_fast import session_from_login

SESSION = "/redfish/v1/SessionService/Sessions/7"
CHANGE = {"@Message.ExtendedInfo": [{"MessageId": "Base.1.8.PasswordChangeRequired", "MessageArgs": ["/A/1"]}]}


@pytest.mark.parametrize(("status", "headers", "answer", "expected"), [
    (201, {"x-auth-token": "t0k", "location": SESSION}, {"@odata.id": "/other"}, ("t0k", SESSION)),
    (201, {"x-auth-token": "t0k"}, {"@odata.id": SESSION}, ("t0k", SESSION)),
    (200, {}, {"@odata.id": SESSION}, (None, SESSION)),
    (400, {"x-auth-token": "t0k"}, None, ("t0k", None)),  # a token is a session, whatever the status
])
def test_a_session_is_its_token_and_location(status: int, headers: dict[str, str], answer: Any,
                                             expected: tuple[str | None, str | None]) -> None:
    assert session_from_login(status, headers, answer) == expected


@pytest.mark.parametrize(("status", "answer", "error", "text"), [
    (401, {}, InvalidCredentialsError, "Invalid credentials"),
    (400, {"error": {"@Message.ExtendedInfo": [{"Message": "account locked"}]}}, SessionCreationError,
     "HTTP 400: Failed to create the session\naccount locked"),
    (500, {"error": {"message": "busy"}}, SessionCreationError, "HTTP 500: Failed to create the session\nbusy"),
    (503, "not json", SessionCreationError, "HTTP 503"),
    (201, CHANGE, RedfishPasswordChangeRequiredError, "Password Change Required"),
    (403, {"error": CHANGE}, RedfishPasswordChangeRequiredError, "Password Change Required"),
])
def test_a_refused_login_raises_what_the_library_raises(status: int, answer: Any, error: type[Exception],
                                                       text: str) -> None:
    with pytest.raises(error, match=text):
        session_from_login(status, {}, answer)
