"""llm-sandbox's API (``from llm_sandbox import SandboxSession, ArtifactSandboxSession``) over Paddock.

Code runs through Paddock's code runner in a Paddock sandbox (the host image by default, whose Python has
matplotlib); plots come back as Paddock captures them."""
from __future__ import annotations

import enum
import io
import os
import tarfile
from dataclasses import dataclass, field
from typing import Any

from ..._client import Client
from ..._errors import PaddockError
from ..._sandbox import Sandbox
from .. import _pip
from . import exceptions
from .exceptions import (ContainerError, LanguageNotSupportedError, NotOpenSessionError, SandboxTimeoutError,
                         SecurityError, UnsupportedBackendError, ValidationError)
from .security import (RestrictedModule, SecurityIssueSeverity, SecurityPattern, SecurityPolicy,
                       get_security_policy)

__all__ = ["SandboxSession", "ArtifactSandboxSession", "create_session", "SandboxBackend", "SupportedLanguage",
           "ConsoleOutput", "ExecutionResult", "PlotOutput", "FileType", "SecurityPolicy", "SecurityPattern",
           "RestrictedModule", "SecurityIssueSeverity", "get_security_policy", "exceptions"]


class SandboxBackend(str, enum.Enum):
    DOCKER = "docker"
    KUBERNETES = "kubernetes"
    PODMAN = "podman"
    MICROMAMBA = "micromamba"


class SupportedLanguage(str, enum.Enum):
    PYTHON = "python"
    JAVA = "java"
    JAVASCRIPT = "javascript"
    CPP = "cpp"
    GO = "go"
    R = "r"
    RUBY = "ruby"


class FileType(enum.Enum):
    PNG = "png"
    JPEG = "jpeg"
    SVG = "svg"
    PDF = "pdf"
    GIF = "gif"
    HTML = "html"
    CSV = "csv"
    JSON = "json"


@dataclass
class ConsoleOutput:
    exit_code: int = 0
    stderr: str = ""
    stdout: str = ""

    def success(self) -> bool:
        return self.exit_code == 0

    @property
    def text(self) -> str:
        return self.stdout


@dataclass
class PlotOutput:
    format: FileType
    content_base64: str
    width: int | None = None
    height: int | None = None
    dpi: int | None = None


@dataclass
class ExecutionResult(ConsoleOutput):
    plots: list[PlotOutput] = field(default_factory=list)


# llm-sandbox's own default images (Docker Hub, GHCR): the session's default Paddock image stands in for them.
_SEED_IMAGES = ("vndee/sandbox-", "ghcr.io/vndee/sandbox-")
_RUNTIME_CONFIGS = {"mem_limit": "memory", "memory": "memory", "cpu_count": "cpus", "pids_limit": "pids"}


def _pod_limits(manifest: dict) -> dict[str, Any]:
    """A Kubernetes pod manifest's first container's resource limits, as the sandbox's memory and cpus; anything
    else in the manifest is refused by name (a Paddock sandbox is not a pod of that manifest)."""
    spec = manifest.get("spec", {}) if isinstance(manifest, dict) else {}
    unknown = [k for k in (manifest or {}) if k not in ("spec", "metadata", "apiVersion", "kind")]
    unknown += [f"spec.{k}" for k in spec if k != "containers"]
    containers = spec.get("containers") or [{}]
    unknown += [f"spec.containers[0].{k}" for k in containers[0] if k not in ("resources", "name", "image")]
    unknown += [f"spec.containers[0].resources.{k}" for k in containers[0].get("resources", {})
                if k not in ("limits", "requests")]
    if unknown or len(containers) > 1:
        raise ValidationError(f"pod_manifest: only the first container's resource limits apply to a Paddock sandbox"
                              f" (not supported: {', '.join(unknown) or 'more than one container'})")
    out: dict[str, Any] = {}
    limits = containers[0].get("resources", {}).get("limits", {})
    for key, value in limits.items():
        if key == "memory":
            out["memory"] = str(value)
        elif key == "cpu":
            text = str(value)
            out["cpus"] = int(text[:-1]) / 1000 if text.endswith("m") else float(text)
        else:
            raise ValidationError(f"pod_manifest: resource limit '{key}' is not supported (memory and cpu are)")
    return out


class _Session:
    def __init__(self, backend: SandboxBackend = SandboxBackend.DOCKER, image: str | None = None,
                 dockerfile: str | None = None, lang: str = SupportedLanguage.PYTHON, *, keep_template: bool = False,
                 commit_container: bool = False, verbose: bool = False, runtime_configs: dict | None = None,
                 workdir: str | None = "/sandbox", enable_plotting: bool = True,
                 security_policy: SecurityPolicy | None = None, container_id: str | None = None,
                 default_timeout: float | None = None, execution_timeout: float | None = None,
                 session_timeout: float | None = None, **kwargs: Any) -> None:
        if SandboxBackend(backend) not in (SandboxBackend.DOCKER, SandboxBackend.PODMAN, SandboxBackend.KUBERNETES):
            raise UnsupportedBackendError(f"backend: {backend} is not supported by Paddock (Docker, Podman and"
                                          " Kubernetes sessions all run as Paddock sandboxes)")
        if kwargs.get("client") is not None:
            raise ValidationError("client: Paddock sessions talk to a Paddock daemon (PADDOCK_URL), not to a"
                                  " Docker, Podman or Kubernetes client")
        if commit_container:
            raise ValidationError("commit_container: not supported; snapshot the sandbox with Paddock instead")
        lang_value = lang.value if isinstance(lang, SupportedLanguage) else str(lang)
        if lang_value not in {l.value for l in SupportedLanguage}:
            raise LanguageNotSupportedError(f"language {lang_value} is not supported")
        self.lang = lang_value
        self.verbose = verbose
        self.keep_template = keep_template
        self.workdir = workdir or "/sandbox"
        self.enable_plotting = enable_plotting
        self.security_policy = security_policy
        self.container_id = container_id
        self.execution_timeout = execution_timeout or default_timeout
        self.session_timeout = session_timeout
        self._image = None if image is None or image.startswith(_SEED_IMAGES) else image
        self._dockerfile = dockerfile
        # The policy's preset limits first; runtime_configs and a pod manifest's limits override them.
        limits = dict(security_policy.limits) if security_policy is not None else {}
        self._network = limits.pop("network", None)
        self._spec: dict[str, Any] = limits
        for key, value in (runtime_configs or {}).items():
            if key == "timeout":  # llm-sandbox's per-run default, in seconds
                self.execution_timeout = self.execution_timeout or float(value)
                continue
            if key not in _RUNTIME_CONFIGS:
                raise ValidationError(f"runtime_configs: '{key}' is not supported (known: "
                                      f"{', '.join(sorted([*_RUNTIME_CONFIGS, 'timeout']))})")
            self._spec[_RUNTIME_CONFIGS[key]] = value
        if kwargs.get("pod_manifest") is not None:
            self._spec.update(_pod_limits(kwargs["pod_manifest"]))
        # kube_namespace and env_vars are the Kubernetes session's: Paddock's daemon picks the namespace.
        self._env = dict(kwargs.get("env_vars") or {})
        unknown = sorted(set(kwargs) - {"client", "pod_manifest", "kube_namespace", "env_vars", "stream"})
        if unknown:
            raise ValidationError(f"{', '.join(unknown)}: not supported by Paddock's llm-sandbox sessions")
        self._client: Client | None = None
        self._sandbox: Sandbox | None = None
        self._owns = container_id is None

    # ---- lifecycle ----

    def open(self) -> None:
        self._client = Client()
        try:
            if self.container_id:
                self._sandbox = self._client.get(self.container_id)
                return
            image = self._image
            if self._dockerfile:
                image = self._build(self._dockerfile)
            # llm-sandbox's containers have a network (for `libraries`): open, or the PIP_INDEX_URL host only;
            # a security policy's preset narrows it ("packages": the index only) or takes it away ("none").
            self._sandbox = self._client.create(image=image, workdir=self.workdir, network=self._network_spec(),
                                                env=self._env or None, timeout=self.session_timeout or 3600,
                                                **self._spec)
            self._sandbox.exec("mkdir", "-p", self.workdir)
        except PaddockError as e:
            self._client.close()
            self._client = None
            raise ContainerError(str(e)) from e

    def _network_spec(self) -> dict[str, Any]:
        if self._network is None or self._network == "open":
            return _pip.network()
        if self._network == "packages":
            return _pip.index_network()
        return {"mode": str(self._network)}

    def _build(self, dockerfile: str) -> str:
        assert self._client is not None
        context = os.path.dirname(os.path.abspath(dockerfile))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(context, arcname=".")
        tag = "llm-sandbox/" + os.path.basename(context).lower().replace("_", "-") + ":latest"
        self._client._http.call("POST", "/v1/images/build", params={"tag": tag, "dockerfile": os.path.basename(dockerfile)},
                                content=buf.getvalue(), headers={"Content-Type": "application/x-tar"}, timeout=3600)
        return tag

    def close(self) -> None:
        try:
            if self._sandbox is not None and self._owns:
                self._sandbox.destroy()
        finally:
            self._sandbox = None
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> "_Session":
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sb(self) -> Sandbox:
        if self._sandbox is None:
            raise NotOpenSessionError()
        return self._sandbox

    # ---- running ----

    def is_safe(self, code: str) -> tuple[bool, list[SecurityPattern]]:
        if self.security_policy is None:
            return True, []
        found = self.security_policy.violations(code)
        return not found, found

    def _run(self, code: str, libraries: list | None, timeout: float | None, plots: bool) -> ExecutionResult:
        safe, found = self.is_safe(code)
        if not safe:
            raise SecurityError("code violates the security policy: " + "; ".join(p.description or p.pattern for p in found))
        if libraries:
            self.install([str(x) for x in libraries])
        body: dict[str, Any] = {"language": self.lang, "code": code, "cwd": self.workdir}
        limit = timeout or self.execution_timeout
        if limit:
            body["timeout_ms"] = int(limit * 1000)
        try:
            o = self._sb()._client._http.call("POST", f"/v1/sandboxes/{self._sb().id}/code/run", json=body,
                                              timeout=(limit or 600) + 60)
        except PaddockError as e:
            raise ContainerError(str(e)) from e
        if o["status"].get("outcome") == "TIMED_OUT":
            raise SandboxTimeoutError(f"the code ran over its {limit} s", limit)
        out = ExecutionResult(int(o["status"].get("exit_code", 0)), o.get("stderr", ""), o.get("stdout", ""))
        if plots:
            for p in o.get("plots", []):
                try:
                    fmt = FileType(p["format"])
                except ValueError:
                    fmt = FileType.PNG
                out.plots.append(PlotOutput(fmt, p["content"], p.get("width"), p.get("height"), p.get("dpi")))
        return out

    def run(self, code: str, libraries: list | None = None, timeout: float | None = None) -> ConsoleOutput:
        r = self._run(code, libraries, timeout, plots=False)
        return ConsoleOutput(r.exit_code, r.stderr, r.stdout)

    def install(self, libraries: list[str] | None = None) -> None:
        """Installs Python packages with pip in the sandbox (from PIP_INDEX_URL when it is set)."""
        if not libraries:
            return
        if self.lang != SupportedLanguage.PYTHON.value:
            raise ValidationError(f"libraries: only Python packages install here (pip), not {self.lang}'s")
        code, out, err = _pip.install(self._sb(), list(libraries))
        if code != 0:
            raise ContainerError(f"pip could not install {', '.join(libraries)}: {(err or out)[-2000:]}")

    def execute_command(self, command: str, workdir: str | None = None) -> ConsoleOutput:
        r = self._sb().exec("sh", "-c", command, cwd=workdir or self.workdir)
        return ConsoleOutput(r.exit_code, r.stderr_text, r.stdout_text)

    def execute_commands(self, commands: list, workdir: str | None = None) -> ConsoleOutput:
        out = ConsoleOutput()
        for c in commands:
            out = self.execute_command(c if isinstance(c, str) else c[0], workdir)
            if out.exit_code != 0:
                break
        return out

    # ---- files ----

    def copy_to_runtime(self, src: str, dest: str) -> None:
        """Copies a local file or directory into the sandbox at ``dest``."""
        sb = self._sb()
        if os.path.isdir(src):
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tar:
                tar.add(src, arcname=os.path.basename(dest.rstrip("/")) or ".")
            parent = os.path.dirname(dest.rstrip("/")) or "/"
            sb.files.write("/tmp/.paddock-copy.tar", buf.getvalue())
            r = sb.exec("sh", "-c", f"mkdir -p '{parent}' && tar -xf /tmp/.paddock-copy.tar -C '{parent}' && rm /tmp/.paddock-copy.tar")
            if r.exit_code != 0:
                raise ContainerError(f"copying {src} to {dest}: {r.stderr_text}")
            return
        with open(src, "rb") as f:
            data = f.read()
        parent = os.path.dirname(dest)
        if parent:
            sb.exec("mkdir", "-p", parent)
        sb.files.write(dest, data)

    def copy_from_runtime(self, src: str, dest: str) -> None:
        """Copies a file of the sandbox to a local path."""
        data = self._sb().files.read(src)
        os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
        with open(dest, "wb") as f:
            f.write(data)


class SandboxSession(_Session):
    """``SandboxSession`` / ``create_session``: run code and commands in one sandbox."""


class ArtifactSandboxSession(_Session):
    """A session whose ``run`` returns the plots the code made (``ExecutionResult.plots``)."""

    def run(self, code: str, libraries: list | None = None, timeout: float | None = None) -> ExecutionResult:  # type: ignore[override]
        return self._run(code, libraries, timeout, plots=self.enable_plotting)


def create_session(backend: SandboxBackend = SandboxBackend.DOCKER, *args: Any, **kwargs: Any) -> SandboxSession:
    return SandboxSession(backend, *args, **kwargs)


