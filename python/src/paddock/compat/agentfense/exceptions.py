"""AgentFense's exceptions (``agentfense.exceptions``), raised where AgentFense raises them."""
from __future__ import annotations

from ..._errors import PaddockError


class AgentFenseError(Exception):
    """Base of AgentFense's errors."""


class SandboxError(AgentFenseError):
    pass


class SandboxNotFoundError(SandboxError):
    pass


class SandboxNotRunningError(SandboxError):
    pass


class CodebaseError(AgentFenseError):
    pass


class CodebaseNotFoundError(CodebaseError):
    pass


class PermissionDeniedError(AgentFenseError):
    pass


class ConnectionError(AgentFenseError):  # noqa: A001 - AgentFense's own name
    pass


class CommandExecutionError(AgentFenseError):
    """A command exited non-zero with ``raise_on_error=True``."""

    def __init__(self, command: str, exit_code: int, stdout: str = "", stderr: str = "") -> None:
        super().__init__(f"command failed with exit code {exit_code}: {command}")
        self.command = command
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr


class CommandTimeoutError(AgentFenseError):
    def __init__(self, command: str, timeout: float) -> None:
        super().__init__(f"command timed out after {timeout} s: {command}")
        self.command = command
        self.timeout = timeout


def translate(e: PaddockError, what: str = "sandbox") -> AgentFenseError:
    """Paddock's error as AgentFense would raise it."""
    if e.code == "NOT_FOUND":
        return (CodebaseNotFoundError if what == "codebase" else SandboxNotFoundError)(e.message)
    if e.code == "PERMISSION_DENIED":
        return PermissionDeniedError(e.message)
    if e.code == "UNAVAILABLE":
        return ConnectionError(e.message)
    if e.code == "FAILED_PRECONDITION" and what == "sandbox":
        return SandboxNotRunningError(e.message)
    return (CodebaseError if what == "codebase" else SandboxError)(str(e))
