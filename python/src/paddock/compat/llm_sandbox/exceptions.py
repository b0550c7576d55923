"""llm-sandbox's exceptions (``llm_sandbox.exceptions``)."""
from __future__ import annotations


class SandboxError(Exception):
    """Base of llm-sandbox's errors."""


class ContainerError(SandboxError):
    pass


class SecurityError(SandboxError):
    pass


class ResourceError(SandboxError):
    pass


class ValidationError(SandboxError):
    pass


class LanguageNotSupportedError(SandboxError):
    pass


class LanguageNotSupportPlotError(SandboxError):
    pass


class ImageNotFoundError(SandboxError):
    pass


class NotOpenSessionError(SandboxError):
    def __init__(self) -> None:
        super().__init__("the session is not open: use it as a context manager or call open()")


class UnsupportedBackendError(SandboxError):
    pass


class MissingDependencyError(SandboxError):
    pass


class SandboxTimeoutError(SandboxError):
    def __init__(self, message: str = "operation timed out", timeout_duration: float | None = None) -> None:
        super().__init__(message)
        self.timeout_duration = timeout_duration
