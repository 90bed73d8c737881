"""Domain errors of the Hub API and the one table that turns them into HTTP.

huggingface_hub raises its typed exceptions from the `X-Error-Code` header
(RepoNotFound, RevisionNotFound, EntryNotFound) and reads the message from the
JSON body `{"error": ...}` and the `X-Error-Message` header, so every refusal
goes out through `error_response()` with those three parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.errors import HubError


class HubApiError(HubError):
    """A request the hub refuses; `STATUS` below says how it looks on the wire."""

    def __init__(self, message: str, **kwargs) -> None:
        super().__init__(message, **kwargs)


class BadRequest(HubApiError): ...


class Unauthorized(HubApiError): ...  # no token where one is needed


class InvalidToken(HubApiError): ...  # a token that the hub does not know


class Forbidden(HubApiError): ...  # a token without the needed scope


class RepoNotFound(HubApiError): ...  # missing, or private and not yours


class RevisionNotFound(HubApiError): ...


class EntryNotFound(HubApiError): ...


class Conflict(HubApiError): ...  # repository or branch already exists


class StaleParent(HubApiError): ...  # parentCommit is not the branch head


class LfsObjectMissing(HubApiError): ...  # a commit names an LFS object never uploaded


class ChecksumMismatch(HubApiError): ...  # uploaded bytes do not hash to the oid


class PayloadTooLarge(HubApiError): ...


class NotImplementedByHub(HubApiError): ...  # pull requests, V2 Xet endpoints


class RangeNotSatisfiable(HubApiError): ...


class InsufficientStorage(HubApiError): ...  # the disk is full


@dataclass(frozen=True)
class Wire:
    status: int
    code: str  # X-Error-Code ("" = none)


# The one table. Codes the client understands keep the Hub's spelling; the
# others are ours and only show up in messages.
STATUS: dict[type[HubApiError], Wire] = {
    BadRequest: Wire(400, "BadRequest"),
    Unauthorized: Wire(401, "Unauthorized"),
    InvalidToken: Wire(401, "InvalidCredentials"),
    Forbidden: Wire(403, "Forbidden"),
    RepoNotFound: Wire(404, "RepoNotFound"),
    RevisionNotFound: Wire(404, "RevisionNotFound"),
    EntryNotFound: Wire(404, "EntryNotFound"),
    Conflict: Wire(409, "Conflict"),
    StaleParent: Wire(412, "PreconditionFailed"),
    LfsObjectMissing: Wire(422, "LfsObjectMissing"),
    ChecksumMismatch: Wire(422, "ChecksumMismatch"),
    PayloadTooLarge: Wire(413, "PayloadTooLarge"),
    NotImplementedByHub: Wire(501, "NotImplemented"),
    RangeNotSatisfiable: Wire(416, "RangeNotSatisfiable"),
    InsufficientStorage: Wire(507, "InsufficientStorage"),
}

# huggingface_hub special-cases this exact X-Error-Message on a 401 (a bad
# token, as opposed to a private repository), so InvalidToken sends it verbatim.
INVALID_CREDENTIALS = "Invalid credentials in Authorization header"


def wire(error: HubApiError) -> Wire:
    for cls in type(error).__mro__:
        if cls in STATUS:
            return STATUS[cls]  # type: ignore[index]
    return Wire(500, "InternalError")


def error_parts(error: HubApiError) -> tuple[int, dict[str, str], dict]:
    """(status, headers, JSON body) for an error, in the Hub's shape."""
    w = wire(error)
    message = INVALID_CREDENTIALS if isinstance(error, InvalidToken) else error.message
    # Header values must be latin-1 and one line; the body carries the full text.
    header_message = message.replace("\r", " ").replace("\n", " ").encode("latin-1", "replace").decode("latin-1")
    headers = {"X-Error-Message": header_message[:1000]}
    if w.code:
        headers["X-Error-Code"] = w.code
    return w.status, headers, {"error": message}
