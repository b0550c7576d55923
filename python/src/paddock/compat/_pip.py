"""pip inside sandboxes, for the adapters' ``libraries``, ``install``, ``pip_install``, ``python_packages`` and
``requirements``: from ``PIP_INDEX_URL`` when it is set in this process's environment (a private or offline
index; the sandbox is allowed to reach its host only), else from PyPI (the sandbox's network is open)."""
from __future__ import annotations

import os
import shlex
from typing import Any, Sequence
from urllib.parse import urlparse

from .._sandbox import Sandbox


def index_url() -> str | None:
    url = os.environ.get("PIP_INDEX_URL")
    return url or None


def network() -> dict[str, Any]:
    """The network a sandbox that installs packages needs."""
    url = index_url()
    if url is None:
        return {"mode": "open"}
    host = urlparse(url).hostname
    if not host:
        raise ValueError(f"PIP_INDEX_URL: '{url}' has no host")
    allow = f"{host}/32" if host.replace(".", "").isdigit() else host
    return {"mode": "allow", "allow": [allow]}


def index_network() -> dict[str, Any]:
    """The network of a sandbox that may reach the package index and nothing else: PIP_INDEX_URL's host, else
    PyPI's index and file hosts."""
    if index_url() is not None:
        return network()
    return {"mode": "allow", "allow": ["pypi.org", "files.pythonhosted.org"]}


def install(sandbox: Sandbox, packages: Sequence[str], timeout: float = 900) -> tuple[int, str, str]:
    """``pip install --user`` of ``packages`` in the sandbox; returns (exit code, stdout, stderr)."""
    if not packages:
        return 0, "", ""
    argv = ["python3", "-m", "pip", "install", "--user", "--no-input", "--disable-pip-version-check",
            "--break-system-packages"]
    url = index_url()
    if url is not None:
        argv += ["--index-url", url]
        if urlparse(url).scheme == "http":
            argv += ["--trusted-host", urlparse(url).hostname or ""]
    argv += list(packages)
    r = sandbox.exec("sh", "-c", " ".join(shlex.quote(a) for a in argv), timeout=timeout)
    return r.exit_code, r.stdout_text, r.stderr_text
