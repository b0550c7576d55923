"""A sandbox, and what runs and lives in it."""
from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence
from urllib.parse import quote

from ._process import ExitStatus, Process

if TYPE_CHECKING:
    from ._client import Client


@dataclass(frozen=True)
class ExecResult:
    """A finished command: its status and its whole output."""

    status: ExitStatus
    stdout: bytes
    stderr: bytes

    @property
    def exit_code(self) -> int:
        return self.status.exit_code

    @property
    def stdout_text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")


@dataclass(frozen=True)
class SandboxInfo:
    id: str
    name: str | None
    labels: dict[str, str]
    state: str
    stop_reason: str | None
    created_at: str
    expires_at: str
    image: str
    runtime: str
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @staticmethod
    def from_json(o: dict[str, Any]) -> "SandboxInfo":
        return SandboxInfo(o["id"], o.get("name"), dict(o.get("labels") or {}), o["state"], o.get("stop_reason"),
                           o["created_at"], o["expires_at"], o["image"], o["runtime"], o)


@dataclass(frozen=True)
class FileInfo:
    path: str
    type: str
    size: int
    mode: int
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @staticmethod
    def from_json(o: dict[str, Any]) -> "FileInfo":
        return FileInfo(o.get("path", o.get("name", "")), o.get("type", ""), int(o.get("size", 0)),
                        int(o.get("mode", 0)), o)


@dataclass(frozen=True)
class Plot:
    format: str
    mime_type: str
    content: bytes

    @property
    def content_base64(self) -> str:
        return base64.b64encode(self.content).decode()


@dataclass(frozen=True)
class CodeResult:
    """A code run: its output, rich results (``{"text/plain": …, "image/png": …}``), plots and error."""

    status: ExitStatus
    stdout: str
    stderr: str
    results: list[dict[str, str]]
    plots: list[Plot]
    error: dict[str, str] | None
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @property
    def exit_code(self) -> int:
        return self.status.exit_code

    @staticmethod
    def from_json(o: dict[str, Any]) -> "CodeResult":
        return CodeResult(ExitStatus.from_json(o["status"]), o.get("stdout", ""), o.get("stderr", ""),
                          [dict(r.get("data", {})) for r in o.get("results", [])],
                          [Plot(p["format"], p["mime_type"], base64.b64decode(p["content"])) for p in o.get("plots", [])],
                          o.get("error"), o)


class Files:
    """A sandbox's files, by absolute path inside it."""

    def __init__(self, sandbox: "Sandbox") -> None:
        self._sb = sandbox

    def _path(self, suffix: str = "") -> str:
        return f"/v1/sandboxes/{self._sb.id}/files{suffix}"

    def read(self, path: str) -> bytes:
        return self._sb._client._http.request("GET", self._path(), params={"path": path}).content

    def read_text(self, path: str) -> str:
        return self.read(path).decode("utf-8")

    def write(self, path: str, data: bytes | str) -> None:
        body = data.encode() if isinstance(data, str) else bytes(data)
        self._sb._client._http.request("PUT", self._path(), params={"path": path}, content=body,
                                       headers={"Content-Type": "application/octet-stream"})

    def list(self, path: str) -> list[FileInfo]:
        o = self._sb._client._http.call("GET", self._path("/list"), params={"path": path})
        return [FileInfo.from_json(e) for e in o.get("entries", o.get("files", []))]

    def stat(self, path: str) -> FileInfo:
        return FileInfo.from_json(self._sb._client._http.call("GET", self._path("/stat"), params={"path": path}))

    def exists(self, path: str) -> bool:
        from ._errors import NotFoundError
        try:
            self.stat(path)
            return True
        except NotFoundError:
            return False

    def mkdir(self, path: str) -> None:
        self._sb._client._http.call("POST", self._path("/mkdir"), json={"path": path})

    def remove(self, path: str, recursive: bool = False) -> None:
        self._sb._client._http.call("POST", self._path("/remove"), json={"path": path, "recursive": recursive})

    def move(self, source: str, target: str) -> None:
        self._sb._client._http.call("POST", self._path("/move"), json={"from": source, "to": target})

    def upload(self, local: str, remote: str) -> None:
        """Copies a local file or directory tree to ``remote`` (files and directories; links are skipped, never
        followed)."""
        import os
        if os.path.islink(local):
            return
        if os.path.isdir(local):
            if not self.exists(remote):
                self.mkdir(remote)
            for name in sorted(os.listdir(local)):
                self.upload(os.path.join(local, name), remote.rstrip("/") + "/" + name)
            return
        with open(local, "rb") as f:
            self.write(remote, f.read())

    def download(self, remote: str, local: str) -> None:
        """Copies a file or directory tree of the sandbox to ``local`` (links are not followed or copied)."""
        import os
        info = self.stat(remote)
        if info.type == "DIRECTORY":
            os.makedirs(local, exist_ok=True)
            for entry in self.list(remote):
                name = entry.raw.get("name") or entry.path.rsplit("/", 1)[-1]
                if name in ("", ".", "..") or "/" in name or entry.type == "SYMLINK":
                    continue
                self.download(entry.path, os.path.join(local, name))
        elif info.type == "FILE":
            with open(local, "wb") as f:
                f.write(self.read(remote))


class Sandbox:
    """A sandbox of a Paddock daemon. A context manager: leaving the ``with`` block destroys it."""

    def __init__(self, client: "Client", info: dict[str, Any]) -> None:
        self._client = client
        self.id: str = info["id"]
        self._info = SandboxInfo.from_json(info)
        self.files = Files(self)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def __repr__(self) -> str:
        return f"Sandbox({self.id})"

    @property
    def name(self) -> str | None:
        return self._info.name

    def info(self) -> SandboxInfo:
        self._info = SandboxInfo.from_json(self._client._http.call("GET", f"/v1/sandboxes/{self.id}"))
        return self._info

    @property
    def state(self) -> str:
        return self.info().state

    def exec(self, *argv: str, env: Mapping[str, str] | None = None, cwd: str | None = None,
             timeout: float | None = None, stdin: bytes | str | None = None) -> ExecResult:
        """Runs a command to its end and returns its whole output (up to 16 MiB a stream)."""
        body = _exec_request(argv, env, cwd, timeout)
        if stdin is not None:
            body["stdin"] = base64.b64encode(stdin.encode() if isinstance(stdin, str) else stdin).decode()
        o = self._client._http.call("POST", f"/v1/sandboxes/{self.id}/exec", json=body,
                                    timeout=(timeout or 600) + 30)
        return ExecResult(ExitStatus.from_json(o["status"]), base64.b64decode(o["stdout"]), base64.b64decode(o["stderr"]))

    def start(self, *argv: str, env: Mapping[str, str] | None = None, cwd: str | None = None,
              timeout: float | None = None, output_limit: int | None = None,
              terminal: tuple[int, int] | None = None) -> Process:
        """Starts a command and streams it: iterate ``process.stdout`` (lines) while it runs. Each stream stops
        at ``output_limit`` bytes (the daemon's default, 16 MiB, when not given). ``terminal=(columns, rows)``
        runs it on a pseudo-terminal of that size: everything it prints arrives on ``stdout`` with ``\\r\\n``
        line endings, what is written is typed (and echoed), and ``process.resize`` changes the size."""
        http = self._client._http
        request = _exec_request(argv, env, cwd, timeout)
        if output_limit is not None:
            request["output_limit_bytes"] = int(output_limit)
        if terminal is not None:
            cols, rows = terminal
            request["terminal"] = {"cols": int(cols), "rows": int(rows)}
        return Process(http.ws_url(f"/v1/sandboxes/{self.id}/exec/stream"), http.token, request)

    def run_code(self, code: str, language: str = "python", *, context: str | None = None,
                 timeout: float | None = None, env: Mapping[str, str] | None = None) -> CodeResult:
        """Runs code once, or as a cell of ``context`` (whose state persists between cells)."""
        body: dict[str, Any] = {"language": language, "code": code}
        if timeout is not None:
            body["timeout_ms"] = int(timeout * 1000)
        if env:
            body["env"] = dict(env)
        if context is None:
            return CodeResult.from_json(self._client._http.call("POST", f"/v1/sandboxes/{self.id}/code/run", json=body,
                                                                timeout=(timeout or 600) + 30))
        # A context is made (with this language) the first time a cell names it, as the CLI does.
        from ._errors import NotFoundError
        path = f"/v1/sandboxes/{self.id}/code/contexts/{quote(context, safe='')}/run"
        try:
            o = self._client._http.call("POST", path, json=body, timeout=(timeout or 600) + 30)
        except NotFoundError:
            self.create_context(language, context)
            o = self._client._http.call("POST", path, json=body, timeout=(timeout or 600) + 30)
        return CodeResult.from_json(o)

    def create_context(self, language: str = "python", name: str | None = None) -> str:
        """Makes a code context (a persistent interpreter) and returns its id."""
        body: dict[str, Any] = {"language": language}
        if name:
            body["name"] = name
        o = self._client._http.call("POST", f"/v1/sandboxes/{self.id}/code/contexts", json=body)
        return str(o.get("id") or o.get("name"))

    def update_labels(self, labels: Mapping[str, str]) -> None:
        """Adds labels (replacing the values of keys it has); lists filter on them at once."""
        self._client._http.call("PATCH", f"/v1/sandboxes/{self.id}/labels", json={"labels": dict(labels)})

    def set_timeout(self, seconds: float) -> None:
        self._client._http.call("POST", f"/v1/sandboxes/{self.id}/timeout", json={"timeout_ms": int(seconds * 1000)})

    def pause(self) -> str:
        """Pauses the sandbox; returns ``CHECKPOINTED`` (gVisor: memory on disk) or ``FROZEN`` (runc)."""
        o = self._client._http.call("POST", f"/v1/sandboxes/{self.id}/pause")
        return str(o.get("mode", "")) if isinstance(o, dict) else ""

    def resume(self) -> None:
        self._client._http.call("POST", f"/v1/sandboxes/{self.id}/resume")

    def snapshot(self, tag: str) -> dict[str, Any]:
        """Turns the sandbox's filesystem into an image named ``tag``."""
        return dict(self._client._http.call("POST", f"/v1/sandboxes/{self.id}/snapshot", json={"tag": tag}))

    def codebase_diff(self) -> list[dict[str, Any]]:
        """What the sandbox changed in its codebase: ``[{"path", "kind", "writable"}]``."""
        return list(self._client._http.call("GET", f"/v1/sandboxes/{self.id}/codebase/diff")["changes"])

    def codebase_commit(self) -> dict[str, Any]:
        return dict(self._client._http.call("POST", f"/v1/sandboxes/{self.id}/codebase/commit", json={}))

    def logs(self) -> bytes:
        o = self._client._http.call("GET", f"/v1/sandboxes/{self.id}/logs")
        return base64.b64decode(o.get("output", "")) if isinstance(o, dict) and "output" in o else b""

    def destroy(self) -> None:
        self._client._http.request("DELETE", f"/v1/sandboxes/{self.id}")


def _exec_request(argv: Sequence[str], env: Mapping[str, str] | None, cwd: str | None,
                  timeout: float | None) -> dict[str, Any]:
    if not argv:
        raise ValueError("exec needs a command, e.g. sb.exec('echo', 'hi')")
    body: dict[str, Any] = {"argv": [str(a) for a in argv]}
    if env:
        body["env"] = dict(env)
    if cwd:
        body["cwd"] = cwd
    if timeout is not None:
        body["timeout_ms"] = int(timeout * 1000)
    return body


def iter_lines(process: Process) -> Iterator[str]:
    for line in process.stdout:
        yield line.decode("utf-8", "replace")
