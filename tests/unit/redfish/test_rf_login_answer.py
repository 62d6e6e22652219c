"""The one transport speaks as the DMTF library did: request headers, session login answers."""

from __future__ import annotations

from typing import Any

import pytest

from provision.redfish.errors import RedfishPasswordChangeRequired
from provision.redfish.login import LoginRefused, SessionRefused, session_from_login
from provision.redfish.transport import Transport

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
    (401, {}, LoginRefused, "Invalid credentials"),
    (400, {"error": {"@Message.ExtendedInfo": [{"Message": "account locked"}]}}, SessionRefused,
     "HTTP 400: Failed to create the session\naccount locked"),
    (500, {"error": {"message": "busy"}}, SessionRefused, "HTTP 500: Failed to create the session\nbusy"),
    (503, "not json", SessionRefused, "HTTP 503"),
    (201, CHANGE, RedfishPasswordChangeRequired, "Password Change Required"),
    (403, {"error": CHANGE}, RedfishPasswordChangeRequired, "Password Change Required"),
])
def test_a_refused_login_raises_what_the_library_raised(status: int, answer: Any, error: type[Exception],
                                                       text: str) -> None:
    with pytest.raises(error, match=text):
        session_from_login(status, {}, answer)


@pytest.mark.parametrize(("given", "key", "basic", "expected"), [
    ({}, "t0k", "Basic eA==", {"X-Auth-Token": "t0k", "Accept": "*/*", "OData-Version": "4.0"}),
    ({}, None, "Basic eA==", {"Authorization": "Basic eA==", "Accept": "*/*", "OData-Version": "4.0"}),
    ({"accept": "application/json", "odata-version": "4.01", "If-Match": "W/\"1\""}, None, None,
     {"accept": "application/json", "odata-version": "4.01", "If-Match": "W/\"1\""}),
])
def test_request_headers_are_the_librarys(given: dict[str, str], key: str | None, basic: str | None,
                                          expected: dict[str, str]) -> None:
    http = Transport("https://127.0.0.1:9", None, 1)
    http.token, http.basic = key, basic
    assert http._headers(given) == expected
    assert "X-Auth-Token" not in given  # the caller's dict is not changed
