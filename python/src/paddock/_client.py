"""The entry point: a connection to a Paddock daemon (or a private local one)."""
from __future__ import annotations

import atexit
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from typing import Any, Mapping, Sequence

import httpx

from ._errors import NotFoundError, UnavailableError
from ._http import Transport
from ._images import Images
from ._sandbox import Sandbox, SandboxInfo


class Client:
    """A Paddock daemon. ``Client()`` reads ``PADDOCK_URL`` and ``PADDOCK_TOKEN``; with neither set and the
    ``paddock`` command on the PATH (or ``PADDOCK_COMMAND``), it starts a private local daemon (on the tier of
    ``PADDOCK_DEFAULT_RUNTIME`` when set), shared by the clients of this process and stopped when the last one
    closes. A context manager."""

    def __init__(self, url: str | None = None, token: str | None = None) -> None:
        url = url or os.environ.get("PADDOCK_URL")
        token = token or os.environ.get("PADDOCK_TOKEN")
        self._local: _LocalDaemon | None = None
        if not url:
            self._local = _LocalDaemon.acquire()
            url, token = self._local.url, self._local.token
        if not token:
            raise ValueError("no token: set PADDOCK_TOKEN (the daemon printed where it stored its token)")
        self._http = Transport(url, token)
        self.volumes = Volumes(self)
        self.codebases = Codebases(self)
        self.images = Images(self)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()
        if self._local is not None:
            self._local.release()
            self._local = None

    # ---- sandboxes ----

    def create(self, image: str | None = None, *, entrypoint: Sequence[str] | None = None,
               env: Mapping[str, str] | None = None, secrets: Mapping[str, str] | None = None,
               labels: Mapping[str, str] | None = None, name: str | None = None, memory: str | int | None = None,
               cpus: float | None = None, pids: int | None = None, disk: str | int | None = None,
               timeout: float | None = None, idle_timeout: float | None = None, on_timeout: str | None = None,
               workdir: str | None = None,
               runtime: str | None = None, network: str | Mapping[str, Any] | None = None,
               allow_net: Sequence[str] | None = None, ports: Sequence[int] | None = None,
               volumes: Mapping[str, str] | Sequence[Mapping[str, Any]] | None = None,
               codebase: str | None = None, codebase_path: str = "/workspace", preset: str | None = None,
               permissions: Sequence[str] | None = None) -> Sandbox:
        """Creates a sandbox. Sizes are bytes or strings such as ``"512m"``; ``timeout`` is seconds;
        ``idle_timeout`` (seconds without a command, file operation or code run) applies ``on_timeout``
        (``"destroy"`` or ``"pause"``) early; ``volumes`` maps a volume name to ``"/path"`` or ``"/path:ro"``;
        ``permissions`` are ``"PATTERN:LEVEL"``."""
        spec: dict[str, Any] = {}
        if image:
            spec["image"] = image
        if entrypoint:
            spec["entrypoint"] = list(entrypoint)
        for key, value in (("env", env), ("secrets", secrets), ("labels", labels)):
            if value:
                spec[key] = dict(value)
        for key, value in (("name", name), ("workdir", workdir), ("runtime", runtime), ("cpus", cpus),
                           ("pids", pids), ("on_timeout", on_timeout)):
            if value is not None:
                spec[key] = value
        for key, value in (("memory", memory), ("disk", disk)):
            if value is not None:
                spec[key] = str(value)
        if timeout is not None:
            spec["timeout_ms"] = int(timeout * 1000)
        if idle_timeout is not None:
            spec["idle_timeout_ms"] = int(idle_timeout * 1000)
        if network is not None or allow_net:
            if isinstance(network, Mapping):
                spec["network"] = dict(network)
            elif allow_net:
                spec["network"] = {"mode": "allow", "allow": list(allow_net)}
            else:
                spec["network"] = {"mode": network}
        if ports:
            spec["ports"] = [int(p) for p in ports]
        if volumes:
            if isinstance(volumes, Mapping):
                spec["volumes"] = [{"name": n, "path": p.split(":")[0], "read_only": p.endswith(":ro")}
                                   for n, p in volumes.items()]
            else:
                spec["volumes"] = [dict(v) for v in volumes]
        if codebase:
            cb: dict[str, Any] = {"name": codebase, "path": codebase_path}
            if preset:
                cb["preset"] = preset
            if permissions:
                cb["rules"] = list(permissions)
            spec["codebase"] = cb
        elif preset or permissions:
            raise ValueError("preset and permissions need a codebase")
        return Sandbox(self, self._http.call("POST", "/v1/sandboxes", json=spec, timeout=600))

    def get(self, sandbox_id: str) -> Sandbox:
        return Sandbox(self, self._http.call("GET", f"/v1/sandboxes/{sandbox_id}"))

    def get_by_name(self, name: str) -> Sandbox:
        return Sandbox(self, self._http.call("GET", f"/v1/sandboxes/by-name/{name}"))

    def list(self, labels: Mapping[str, str] | None = None, state: Sequence[str] | None = None) -> list[SandboxInfo]:
        params: list[tuple[str, str]] = [("label", f"{k}={v}") for k, v in (labels or {}).items()]
        params += [("state", s) for s in (state or [])]
        out: list[SandboxInfo] = []
        token = None
        while True:
            page = self._http.call("GET", "/v1/sandboxes", params=params + ([("page_token", token)] if token else []))
            out += [SandboxInfo.from_json(s) for s in page.get("sandboxes", [])]
            token = page.get("next_page_token")
            if not token:
                return out


class Volumes:
    def __init__(self, client: Client) -> None:
        self._c = client

    def create(self, name: str, size: str | int | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name}
        if size is not None:
            body["size"] = str(size)
        return dict(self._c._http.call("POST", "/v1/volumes", json=body))

    def get(self, name: str) -> dict[str, Any]:
        return dict(self._c._http.call("GET", f"/v1/volumes/{name}"))

    def list(self) -> list[dict[str, Any]]:
        return list(self._c._http.call("GET", "/v1/volumes")["volumes"])

    def remove(self, name: str) -> None:
        self._c._http.request("DELETE", f"/v1/volumes/{name}")


class Codebases:
    def __init__(self, client: Client) -> None:
        self._c = client

    def create(self, name: str, directory: str, ignore: Sequence[str] = ()) -> dict[str, Any]:
        """Uploads ``directory`` as codebase ``name`` (the daemon applies .gitignore and .sandboxignore)."""
        import io
        import tarfile
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            tar.add(directory, arcname=".", recursive=True)
        params = [("ignore", p) for p in ignore]
        return dict(self._c._http.call("POST", f"/v1/codebases/{name}", params=params, content=buf.getvalue(),
                                       headers={"Content-Type": "application/x-tar"}, timeout=600))

    def get(self, name: str) -> dict[str, Any]:
        return dict(self._c._http.call("GET", f"/v1/codebases/{name}"))

    def list(self) -> list[dict[str, Any]]:
        return list(self._c._http.call("GET", "/v1/codebases")["codebases"])

    def remove(self, name: str) -> None:
        self._c._http.request("DELETE", f"/v1/codebases/{name}")


class _LocalDaemon:
    """``paddock serve`` on a free loopback port with a private data directory and a random token."""

    _lock = threading.Lock()
    _shared: "_LocalDaemon | None" = None

    def __init__(self) -> None:
        command = os.environ.get("PADDOCK_COMMAND") or shutil.which("paddock")
        if not command:
            raise UnavailableError("no PADDOCK_URL is set and no `paddock` command is on the PATH to start a local"
                                   " daemon; set PADDOCK_URL and PADDOCK_TOKEN, or PADDOCK_COMMAND")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.token = secrets.token_urlsafe(32)
        self.url = f"http://127.0.0.1:{port}"
        self._dir = tempfile.mkdtemp(prefix="paddock-py-")
        env = dict(os.environ, PADDOCK_TOKEN=self.token)
        self._log = open(os.path.join(self._dir, "daemon.log"), "wb")
        argv = [command, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", os.path.join(self._dir, "data")]
        if os.environ.get("PADDOCK_DEFAULT_RUNTIME"):
            argv += ["--default-runtime", os.environ["PADDOCK_DEFAULT_RUNTIME"]]
        self._proc = subprocess.Popen(argv, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        self._users = 0
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise UnavailableError(f"the local daemon exited at start; see {self._log.name}")
            try:
                if httpx.get(self.url + "/v1/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.25)
        self._stop(keep=True)
        raise UnavailableError(f"the local daemon did not start in time; see {self._log.name}")

    @classmethod
    def acquire(cls) -> "_LocalDaemon":
        with cls._lock:
            if cls._shared is None:
                cls._shared = _LocalDaemon()
                atexit.register(cls._shared._stop)
            cls._shared._users += 1
            return cls._shared

    def release(self) -> None:
        with _LocalDaemon._lock:
            self._users -= 1
            if self._users == 0:
                self._stop()
                _LocalDaemon._shared = None

    def _stop(self, keep: bool = False) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(30)
        self._log.close()
        if not keep:
            _remove_private_dir(self._dir)


def _remove_private_dir(path: str) -> None:
    """Removes a stopped private daemon's directory (its data and log), unless something is still mounted under
    it: shutil.rmtree would go into a mount and delete what is not the daemon's."""
    real = os.path.realpath(path)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 4:
                    point = fields[4].replace("\\040", " ")
                    if point == real or point.startswith(real + "/"):
                        return
    except OSError:
        return
    shutil.rmtree(real, ignore_errors=True)


__all__ = ["Client", "Volumes", "Codebases", "NotFoundError"]
