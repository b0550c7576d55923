"""Modal's exceptions (``modal.exception``), raised where Modal raises them."""
from __future__ import annotations


class Error(Exception):
    """Base of Modal's errors."""


class AlreadyExistsError(Error):
    pass


class NotFoundError(Error):
    pass


class InvalidError(Error):
    pass


class SandboxTimeoutError(Error):
    pass


class SandboxTerminatedError(Error):
    pass


class ExecutionError(Error):
    pass


class AuthError(Error):
    pass


def translate(e: Exception) -> Exception:
    code = getattr(e, "code", "")
    message = getattr(e, "message", str(e))
    return {"ALREADY_EXISTS": AlreadyExistsError, "NOT_FOUND": NotFoundError, "INVALID_ARGUMENT": InvalidError,
            "PERMISSION_DENIED": AuthError, "FAILED_PRECONDITION": SandboxTerminatedError}.get(code, Error)(message)
