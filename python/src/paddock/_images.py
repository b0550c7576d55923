"""Images: a builder of steps (Debian base, apt, pip, npm, run, env, workdir) built by the daemon."""
from __future__ import annotations

import hashlib
import io
import json
import tarfile
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ._client import Client


class Image:
    """An image as steps, like the Java builder's: ``Image.debian("bookworm").apt("git").pip("numpy")``."""

    def __init__(self, steps: list[dict[str, Any]], local: dict[str, str] | None = None, workdir: str = "/") -> None:
        self.steps = steps
        self.local = dict(local or {})
        self._workdir = workdir

    @staticmethod
    def debian(suite: str = "bookworm", slim: bool = False) -> "Image":
        return Image([{"type": "from", "base": f"debian:{suite}{'-slim' if slim else ''}"}])

    @staticmethod
    def base(reference: str) -> "Image":
        return Image([{"type": "from", "base": reference}])

    def _with(self, step: dict[str, Any], local: dict[str, str] | None = None, workdir: str | None = None) -> "Image":
        return Image(self.steps + [step], {**self.local, **(local or {})}, workdir or self._workdir)

    def copy(self, local: str, dest: str, chown: str | None = None) -> "Image":
        """Copies a local file or directory into the image at ``dest`` (relative: against the working directory);
        links in it are copied as links, never followed."""
        import os
        if not os.path.exists(local):
            raise ValueError(f"copy: '{local}' does not exist")
        name = f"local-{len(self.local)}/{os.path.basename(os.path.abspath(local))}"
        target = dest if dest.startswith("/") else self._workdir.rstrip("/") + "/" + dest
        step: dict[str, Any] = {"type": "copy", "source": name, "dest": target}
        if chown:
            step["chown"] = chown
        return self._with(step, {name: os.path.abspath(local)})

    def apt(self, *packages: str) -> "Image":
        return self._with({"type": "apt", "packages": list(packages)})

    def pip(self, *packages: str, index_url: str | None = None) -> "Image":
        step: dict[str, Any] = {"type": "pip", "packages": list(packages)}
        if index_url:
            step["index_url"] = index_url
        return self._with(step)

    def npm(self, *packages: str) -> "Image":
        return self._with({"type": "npm", "packages": list(packages)})

    def run(self, command: str) -> "Image":
        return self._with({"type": "run", "argv": ["/bin/sh", "-c", command], "shell": True})

    def env(self, key: str, value: str) -> "Image":
        return self._with({"type": "env", "key": key, "value": value})

    def workdir(self, path: str) -> "Image":
        target = path if path.startswith("/") else self._workdir.rstrip("/") + "/" + path
        return self._with({"type": "workdir", "path": path}, workdir=target)

    def key(self) -> str:
        """A name for these steps: the same steps, the same name (and the daemon's build cache)."""
        return hashlib.sha256(json.dumps(self.steps, sort_keys=True).encode()).hexdigest()[:16]


class Images:
    def __init__(self, client: "Client") -> None:
        self._c = client

    def build(self, image: Image, tag: str | None = None, on_log: "Callable[[str], None] | None" = None) -> str:
        """Builds ``image`` on the daemon (RUN steps in sandboxes, cached) and returns its name; ``on_log`` gets
        the build's output lines as they come (the daemon streams them as NDJSON events)."""
        name = tag or f"py/{image.key()}:1"
        buf = io.BytesIO()
        data = json.dumps({"steps": image.steps}).encode()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            info = tarfile.TarInfo("image.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            for name, path in image.local.items():
                tar.add(path, arcname=name, recursive=True)
        if on_log is None:
            self._c._http.call("POST", "/v1/images/build-spec", params={"tag": name}, content=buf.getvalue(),
                               headers={"Content-Type": "application/x-tar"}, timeout=3600)
            return name
        from ._errors import from_body
        pending = b""
        for chunk in self._c._http.stream("POST", "/v1/images/build-spec", params={"tag": name}, timeout=3600,
                                          content=buf.getvalue(), headers={"Content-Type": "application/x-tar",
                                                                           "Accept": "application/x-ndjson"}):
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if not line.strip():
                    continue
                event = json.loads(line)
                kind = event.get("type")
                if kind == "log":
                    on_log(str(event.get("line", "")))
                elif kind == "step":
                    on_log(f"step {event.get('index', '')}: {event.get('step', event.get('text', ''))}".rstrip())
                elif kind == "error":
                    raise from_body(0, event.get("error"))
        return name

    def list(self) -> list[dict[str, Any]]:
        return list(self._c._http.call("GET", "/v1/images")["images"])

    def get(self, reference: str) -> dict[str, Any]:
        return dict(self._c._http.call("GET", "/v1/image", params={"ref": reference}))

    def pull(self, reference: str, insecure: bool = False) -> dict[str, Any]:
        return dict(self._c._http.call("POST", "/v1/images/pull", json={"ref": reference, "insecure": insecure},
                                       timeout=3600))
