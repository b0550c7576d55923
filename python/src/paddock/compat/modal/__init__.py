"""Modal's Sandbox API (``import modal``) over Paddock: ``from paddock.compat import modal``.

An App is a label (``modal.app``) on its sandboxes; a Sandbox is a Paddock sandbox. Images are built by the
Paddock daemon from the same steps (Debian, apt, pip, run); the default image is Paddock's host image, with
``python`` on the PATH as Modal's default image has it."""
from __future__ import annotations

import contextlib
import io
import re
import time
from typing import Any, Iterator, Optional, Sequence

from ..._client import Client
from ..._errors import PaddockError
from ..._images import Image as _CoreImage
from ..._process import Process as _CoreProcess
from ..._sandbox import Sandbox as _CoreSandbox
from .. import _pip
from . import exception

__all__ = ["App", "Sandbox", "Image", "Secret", "Volume", "enable_output", "exception"]

APP_LABEL = "modal.app"
_COMPAT_BIN = "/opt/.paddock-modal/bin"
_PATH = f"{_COMPAT_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _python_on_path(core: "_CoreSandbox") -> None:
    """The seeds' default images have `python`; the host image has python3: a `python` goes into _COMPAT_BIN."""
    core.exec("sh", "-c", f"mkdir -p {_COMPAT_BIN} && ln -sf /usr/bin/python3 {_COMPAT_BIN}/python")
_client: Optional[Client] = None


def _c() -> Client:
    global _client
    if _client is None:
        _client = Client()
    return _client


def _slug(text: str, what: str) -> str:
    s = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    if not s:
        raise exception.InvalidError(f"{what}: '{text}' has no usable characters")
    return s[:40]


@contextlib.contextmanager
def enable_output() -> Iterator[None]:
    """Modal shows build logs within this block; the daemon's build runs the same either way."""
    yield


class App:
    def __init__(self, name: str) -> None:
        self.name = name
        self.app_id = _slug(name, "app")

    @staticmethod
    def lookup(name: str, *, create_if_missing: bool = False, environment_name: Optional[str] = None) -> "App":
        if environment_name is not None:
            raise exception.InvalidError("environment_name: Paddock has no Modal environments")
        # An App here is only a label on its sandboxes: looking one up always finds it.
        return App(name)


class Secret:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = dict(values)

    @staticmethod
    def from_dict(env_dict: dict[str, Optional[str]]) -> "Secret":
        return Secret({k: v for k, v in env_dict.items() if v is not None})

    @staticmethod
    def from_name(name: str, **_: Any) -> "Secret":
        raise exception.NotFoundError(f"Secret.from_name('{name}'): Paddock keeps no named secrets; use"
                                      " Secret.from_dict")


class Volume:
    def __init__(self, name: str) -> None:
        self.name = name

    @staticmethod
    def from_name(name: str, *, create_if_missing: bool = False, environment_name: Optional[str] = None) -> "Volume":
        vol = _slug(name, "volume")
        try:
            _c().volumes.get(vol)
        except PaddockError as e:
            if e.code != "NOT_FOUND" or not create_if_missing:
                raise exception.translate(e) from e
            _c().volumes.create(vol)
        return Volume(vol)


class Image:
    def __init__(self, core: Optional[_CoreImage]) -> None:
        self._core = core

    @staticmethod
    def debian_slim(python_version: Optional[str] = None) -> "Image":
        if python_version not in (None, "3.11"):
            raise exception.InvalidError(f"python_version: Paddock's Debian images have Python 3.11, not {python_version}")
        return Image(_CoreImage.debian("bookworm", slim=True).apt("python3", "python3-pip", "python-is-python3"))

    @staticmethod
    def from_registry(tag: str, **kwargs: Any) -> "Image":
        if kwargs:
            raise exception.InvalidError(f"{', '.join(kwargs)}: not supported by Paddock's from_registry")
        return Image(_CoreImage.base(tag))

    def _step(self, core: _CoreImage) -> "Image":
        return Image(core)

    def apt_install(self, *packages: str | Sequence[str]) -> "Image":
        return self._step(self._base().apt(*_flat(packages)))

    def pip_install(self, *packages: str | Sequence[str]) -> "Image":
        return self._step(self._base().pip(*_flat(packages), index_url=_pip.index_url()))

    def run_commands(self, *commands: str | Sequence[str]) -> "Image":
        core = self._base()
        for c in _flat(commands):
            core = core.run(c)
        return self._step(core)

    def env(self, vars: dict[str, str]) -> "Image":
        core = self._base()
        for k, v in vars.items():
            core = core.env(k, v)
        return self._step(core)

    def workdir(self, path: str) -> "Image":
        return self._step(self._base().workdir(path))

    def _base(self) -> _CoreImage:
        return self._core if self._core is not None else Image.debian_slim()._core  # type: ignore[return-value]

    def _reference(self) -> Optional[str]:
        if self._core is None:
            return None
        steps = self._core.steps
        if len(steps) == 1 and steps[0]["type"] == "from" and not steps[0]["base"].startswith("debian:"):
            return steps[0]["base"]  # from_registry: a stored (pulled) image
        return _c().images.build(self._core)


def _flat(items: Sequence[Any]) -> list[str]:
    out: list[str] = []
    for i in items:
        out.extend([i] if isinstance(i, str) else list(i))
    return out


class _StreamReader:
    """Modal's ``StreamReader``: ``read()`` for all of it, iteration by lines (str)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = ""

    def read(self) -> str:
        return self._buf + b"".join(self._chunks).decode("utf-8", "replace")

    def __iter__(self) -> Iterator[str]:
        pending = b""
        for chunk in self._chunks:
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                yield line.decode("utf-8", "replace") + "\n"
        if pending:
            yield pending.decode("utf-8", "replace")


class _StreamWriter:
    def __init__(self, process: _CoreProcess) -> None:
        self._p = process

    def write(self, data: bytes | str) -> None:
        self._p.write(data)

    def write_eof(self) -> None:
        self._p.close_stdin()

    def drain(self) -> None:
        """Writes are sent as they are made."""


class ContainerProcess:
    def __init__(self, process: _CoreProcess) -> None:
        self._p = process
        self.stdout = _StreamReader(process.stdout.chunks())
        self.stderr = _StreamReader(process.stderr.chunks())
        self.stdin = _StreamWriter(process)

    def wait(self) -> int:
        try:
            return self._p.wait().exit_code
        except PaddockError as e:
            raise exception.translate(e) from e

    def poll(self) -> Optional[int]:
        return self._p.returncode

    @property
    def returncode(self) -> Optional[int]:
        return self._p.returncode


class _File(io.StringIO):
    """``Sandbox.open``: a file of the sandbox, read at open and written back at close."""

    def __init__(self, sb: _CoreSandbox, path: str, mode: str) -> None:
        self._sb, self._path, self._mode = sb, path, mode
        initial = ""
        if "r" in mode or "a" in mode:
            try:
                initial = sb.files.read_text(path)
            except PaddockError:
                if "r" in mode:
                    raise
        super().__init__(initial)
        if "a" in mode:
            self.seek(0, io.SEEK_END)

    def close(self) -> None:
        if not self.closed and any(m in self._mode for m in "wa+"):
            self._sb.files.write(self._path, self.getvalue())
        super().close()


class Sandbox:
    def __init__(self, core: _CoreSandbox, entrypoint: Optional[_CoreProcess] = None,
                 workdir: Optional[str] = None) -> None:
        self._core = core
        self._workdir = workdir or "/workspace"
        self.object_id = core.id
        self._entrypoint = entrypoint
        self.stdout = _StreamReader(entrypoint.stdout.chunks() if entrypoint else iter(()))
        self.stderr = _StreamReader(entrypoint.stderr.chunks() if entrypoint else iter(()))

    @staticmethod
    def create(*entrypoint_args: str, app: Optional[App] = None, image: Optional[Image] = None,
               secrets: Sequence[Secret] = (), volumes: Optional[dict[str, Volume]] = None,
               workdir: Optional[str] = None, timeout: int = 300, name: Optional[str] = None,
               cpu: Optional[float] = None, memory: Optional[int] = None, block_network: bool = False,
               cidr_allowlist: Optional[Sequence[str]] = None, verbose: bool = False,
               encrypted_ports: Sequence[int] = (), **unsupported: Any) -> "Sandbox":
        if unsupported:
            raise exception.InvalidError(f"{', '.join(sorted(unsupported))}: not supported by Paddock's Sandbox.create")
        if app is None:
            raise exception.InvalidError("app: Sandboxes require an App (modal.App.lookup(name, create_if_missing=True))")
        env: dict[str, str] = {"PATH": _PATH}
        for s in secrets:
            env.update(s.values)
        ref = image._reference() if image is not None else None
        try:
            core = _c().create(
                image=ref, env=env, labels={APP_LABEL: app.app_id},
                name=f"{app.app_id}-{_slug(name, 'name')}" if name else None, timeout=timeout,
                memory=f"{memory}m" if memory else None, cpus=cpu, workdir=workdir,
                network=None if block_network else ({"mode": "allow", "allow": list(cidr_allowlist)} if cidr_allowlist
                                                    else _pip.network()),
                ports=list(encrypted_ports) or None,
                volumes=[{"name": v.name, "path": p, "read_only": False} for p, v in (volumes or {}).items()] or None)
        except PaddockError as e:
            raise exception.translate(e) from e
        if ref is None:
            _python_on_path(core)
        if workdir:
            core.exec("mkdir", "-p", workdir)
        process = core.start(*entrypoint_args, env=env, timeout=timeout) if entrypoint_args else None
        return Sandbox(core, process, workdir)

    @staticmethod
    def from_id(sandbox_id: str) -> "Sandbox":
        try:
            return Sandbox(_c().get(sandbox_id))
        except PaddockError as e:
            raise exception.translate(e) from e

    @staticmethod
    def from_name(app_name: str, name: str, **_: Any) -> "Sandbox":
        try:
            return Sandbox(_c().get_by_name(f"{_slug(app_name, 'app')}-{_slug(name, 'name')}"))
        except PaddockError as e:
            raise exception.translate(e) from e

    @staticmethod
    def list(*, app_id: Optional[str] = None, tags: Optional[dict[str, str]] = None) -> Iterator["Sandbox"]:
        labels = dict(tags or {})
        if app_id:
            labels[APP_LABEL] = app_id
        for info in _c().list(labels=labels, state=["RUNNING"]):
            yield Sandbox(_c().get(info.id))

    def set_tags(self, tags: dict[str, str]) -> None:
        if APP_LABEL in tags:
            raise exception.InvalidError(f"set_tags: '{APP_LABEL}' is the sandbox's app")
        try:
            self._core.update_labels(tags)
        except PaddockError as e:
            raise exception.translate(e) from e

    def exec(self, *args: str, timeout: Optional[int] = None, workdir: Optional[str] = None,
             secrets: Sequence[Secret] = (), **unsupported: Any) -> ContainerProcess:
        if unsupported:
            raise exception.InvalidError(f"{', '.join(sorted(unsupported))}: not supported by Paddock's exec")
        env: dict[str, str] = {"PATH": _PATH}
        for s in secrets:
            env.update(s.values)
        try:
            return ContainerProcess(self._core.start(*args, env=env, cwd=workdir, timeout=timeout))
        except PaddockError as e:
            raise exception.translate(e) from e

    def open(self, path: str, mode: str = "r") -> _File:
        full = path if path.startswith("/") else f"{self._workdir}/{path}"
        return _File(self._core, full, mode)

    def wait(self, raise_on_termination: bool = True) -> None:
        if self._entrypoint is not None:
            self._entrypoint.wait()
            return
        while self._core.info().state in ("CREATING", "RUNNING", "PAUSED"):
            time.sleep(0.5)

    def poll(self) -> Optional[int]:
        return self._entrypoint.returncode if self._entrypoint is not None else None

    @property
    def returncode(self) -> Optional[int]:
        return self.poll()

    def terminate(self) -> None:
        self._core.destroy()
