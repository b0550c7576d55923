"""BentoML's sandboxes (``bentoml.sandbox``, ``bentoml.images.Image``, ``bentoml.BentoCloudClient``) over
Paddock: ``from paddock.compat import bentoml``."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ..._client import Client
from ..._errors import PaddockError
from ..._images import Image as _CoreImage
from ..._sandbox import Sandbox as _CoreSandbox
from .. import _pip
from ..modal import _PATH, ContainerProcess, _python_on_path  # the same streams: stdout.read() and lines

__all__ = ["sandbox", "images", "BentoCloudClient", "BentoMLException"]


class BentoMLException(Exception):
    pass


class _Images:
    class Image:
        """``bentoml.images.Image(python_version=…)`` with ``run`` and ``python_packages`` steps."""

        def __init__(self, python_version: Optional[str] = None, distro: Optional[str] = None,
                     base_image: Optional[str] = None, **unsupported: Any) -> None:
            if unsupported:
                raise BentoMLException(f"{', '.join(sorted(unsupported))}: not supported by Paddock's images")
            if python_version not in (None, "3.11"):
                raise BentoMLException(f"python_version: Paddock's Debian images have Python 3.11, not {python_version}")
            if distro not in (None, "debian"):
                raise BentoMLException(f"distro: only debian here, not {distro}")
            self._core = (_CoreImage.base(base_image) if base_image else
                          _CoreImage.debian("bookworm", slim=True).apt("python3", "python3-pip", "python-is-python3"))

        def run(self, command: str) -> "_Images.Image":
            self._core = self._core.run(command)
            return self

        def python_packages(self, *packages: str) -> "_Images.Image":
            self._core = self._core.pip(*packages, index_url=_pip.index_url())
            return self

        def system_packages(self, *packages: str) -> "_Images.Image":
            self._core = self._core.apt(*packages)
            return self


images = _Images()


class Sandbox:
    def __init__(self, core: _CoreSandbox) -> None:
        self._core = core
        self.id = core.id
        self.name = core.name

    def wait_until_ready(self, log_polling: bool = False, timeout: float = 300) -> None:
        """A Paddock sandbox is ready when create returns."""

    def exec(self, *args: str, **unsupported: Any) -> ContainerProcess:
        if unsupported:
            raise BentoMLException(f"{', '.join(sorted(unsupported))}: not supported by Paddock's exec")
        return ContainerProcess(self._core.start(*args, env={"PATH": _PATH}))

    def destroy(self) -> None:
        self._core.destroy()


class _SandboxApi:
    def __init__(self, client: Optional[Client] = None) -> None:
        self._client = client

    def _c(self) -> Client:
        if self._client is None:
            self._client = Client()
        return self._client

    def create(self, image: Optional[_Images.Image] = None, cmd: Optional[Sequence[str]] = None,
               envs: Optional[dict[str, str]] = None, secrets: Optional[Sequence[str]] = None,
               labels: Optional[dict[str, str]] = None, name: Optional[str] = None, cluster: Optional[str] = None,
               client: Any = None) -> Sandbox:
        if cluster is not None:
            raise BentoMLException("cluster: BentoCloud clusters do not exist here; a Paddock daemon runs the sandbox")
        if secrets:
            raise BentoMLException("secrets: BentoCloud's named secrets do not exist here; pass values with envs")
        api = client.sandbox if isinstance(client, BentoCloudClient) else self
        try:
            ref = api._c().images.build(image._core) if image is not None else None
            core = api._c().create(image=ref, entrypoint=list(cmd) if cmd else None, env={"PATH": _PATH, **(envs or {})},
                                   labels=labels, name=name, network=_pip.network(), timeout=3600)
            if ref is None:
                _python_on_path(core)
        except PaddockError as e:
            raise BentoMLException(str(e)) from e
        return Sandbox(core)

    def get(self, name: str) -> Sandbox:
        try:
            return Sandbox(self._c().get_by_name(name))
        except PaddockError as e:
            raise BentoMLException(str(e)) from e

    def destroy(self, name: str) -> None:
        self.get(name).destroy()


class BentoCloudClient:
    def __init__(self, api_key: Optional[str] = None, endpoint: Optional[str] = None) -> None:
        self.sandbox = _SandboxApi(Client(url=endpoint, token=api_key) if endpoint else None)


sandbox = _SandboxApi()
