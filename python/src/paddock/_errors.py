"""One exception family: every failure the daemon reports carries its error code."""
from __future__ import annotations

from typing import Any


class PaddockError(Exception):
    """A failure reported by Paddock: ``code`` is the daemon's error code (``NOT_FOUND``, ...)."""

    code: str = "INTERNAL"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.status = status

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class InvalidArgumentError(PaddockError):
    code = "INVALID_ARGUMENT"


class NotFoundError(PaddockError):
    code = "NOT_FOUND"


class AlreadyExistsError(PaddockError):
    code = "ALREADY_EXISTS"


class FailedPreconditionError(PaddockError):
    code = "FAILED_PRECONDITION"


class ResourceExhaustedError(PaddockError):
    code = "RESOURCE_EXHAUSTED"


class DeadlineExceededError(PaddockError):
    code = "DEADLINE_EXCEEDED"


class UnavailableError(PaddockError):
    code = "UNAVAILABLE"


class PermissionDeniedError(PaddockError):
    code = "PERMISSION_DENIED"


class InternalError(PaddockError):
    code = "INTERNAL"


_BY_CODE: dict[str, type[PaddockError]] = {
    c.code: c
    for c in (
        InvalidArgumentError,
        NotFoundError,
        AlreadyExistsError,
        FailedPreconditionError,
        ResourceExhaustedError,
        DeadlineExceededError,
        UnavailableError,
        PermissionDeniedError,
        InternalError,
    )
}


def from_body(status: int, body: Any) -> PaddockError:
    """The exception for an error answer: ``{"error": {"code", "message"}}``."""
    code, message = "INTERNAL", f"HTTP {status}"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = str(body["error"].get("code", code))
        message = str(body["error"].get("message", message))
    cls = _BY_CODE.get(code, PaddockError)
    return cls(message, code=code, status=status)
