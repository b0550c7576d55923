"""Paddock's Python SDK: sandboxes for untrusted and AI-generated code, over a Paddock daemon.

    import paddock
    with paddock.Client() as client, client.create() as sb:
        print(sb.exec("echo", "hi").stdout_text)
"""
from ._aio import AsyncClient, AsyncFiles, AsyncProcess, AsyncSandbox
from ._client import Client, Codebases, Volumes
from ._errors import (AlreadyExistsError, DeadlineExceededError, FailedPreconditionError, InternalError,
                      InvalidArgumentError, NotFoundError, PaddockError, PermissionDeniedError,
                      ResourceExhaustedError, UnavailableError)
from ._images import Image, Images
from ._process import ExitStatus, Process
from ._sandbox import CodeResult, ExecResult, FileInfo, Files, Plot, Sandbox, SandboxInfo

__all__ = [
    "Client", "AsyncClient", "AsyncSandbox", "AsyncProcess", "AsyncFiles", "Codebases", "Volumes", "Image", "Images", "Sandbox", "SandboxInfo", "Files", "FileInfo", "ExecResult", "ExitStatus",
    "Process", "CodeResult", "Plot", "PaddockError", "InvalidArgumentError", "NotFoundError", "AlreadyExistsError",
    "FailedPreconditionError", "ResourceExhaustedError", "DeadlineExceededError", "UnavailableError",
    "PermissionDeniedError", "InternalError",
]
