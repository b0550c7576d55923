"""A real daemon for the tests: with PADDOCK_URL unset, paddock.Client() starts a private local one through
the repository's ./paddock command (PADDOCK_COMMAND), which is what a user's script gets."""
from __future__ import annotations

import os
import pathlib
from typing import Iterator

import pytest

import paddock

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def client() -> Iterator[paddock.Client]:
    if os.geteuid() != 0:
        pytest.fail("the Python SDK's tests need root (they start a daemon that runs sandboxes)")
    os.environ.pop("PADDOCK_URL", None)
    os.environ.setdefault("PADDOCK_COMMAND", str(REPO / "paddock"))
    # Image builds (bentoml's python_packages) reach the pip_index fixture's test host, besides apt's sources.
    os.environ.setdefault("PADDOCK_BUILD_ALLOW", "apt-sources,198.18.16.2/32")
    c = paddock.Client()
    yield c
    c.close()


@pytest.fixture(scope="session")
def pip_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A PEP 503 index of a wheel this fixture builds (``paddockdemo``, ``VALUE = 42``), served by
    ``python3 -m http.server`` on a test host in a network namespace the fixture makes (198.18.16.2, a veth to
    the host's 198.18.16.1): the only address sandboxes installing packages are allowed to reach."""
    import subprocess
    import sys
    import time

    root = tmp_path_factory.mktemp("pip-index")
    pkg = root / "src"
    (pkg / "paddockdemo").mkdir(parents=True)
    (pkg / "paddockdemo" / "__init__.py").write_text("VALUE = 42\n")
    (pkg / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
                                        '[project]\nname = "paddockdemo"\nversion = "0.1"\n')
    wheels = root / "www" / "wheels"
    subprocess.run(["/usr/bin/python3", "-m", "pip", "wheel", "-q", "--no-index", "--no-build-isolation", "--no-deps",
                    "-w", str(wheels), str(pkg)], check=True)
    wheel = next(wheels.glob("paddockdemo-*.whl")).name
    simple = root / "www" / "simple" / "paddockdemo"
    simple.mkdir(parents=True)
    (simple / "index.html").write_text(f'<html><body><a href="../../wheels/{wheel}">{wheel}</a></body></html>\n')
    ns = f"pdpy{os.getpid() % 100000}"

    def sh(cmd: str) -> None:
        subprocess.run(["sh", "-c", cmd], check=True)

    sh(f"ip netns add {ns} && ip link add {ns}h type veth peer name {ns}n && ip link set {ns}n netns {ns}"
       f" && ip addr add 198.18.16.1/24 dev {ns}h && ip link set {ns}h up"
       f" && ip -n {ns} addr add 198.18.16.2/24 dev {ns}n && ip -n {ns} link set {ns}n up && ip -n {ns} link set lo up")
    server = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-m", "http.server", "8080", "--bind",
                               "198.18.16.2", "--directory", str(root / "www")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _await_listening("198.18.16.2", 8080, server)
        yield "http://198.18.16.2:8080/simple"
    finally:
        server.terminate()
        server.wait(10)
        subprocess.run(["sh", "-c", f"ip link del {ns}h 2>/dev/null; ip netns del {ns} 2>/dev/null; true"])


def _await_listening(host: str, port: int, server: "subprocess.Popen[bytes]", limit: float = 60) -> None:
    """Returns once the index's server accepts connections: a loaded machine starts Python slowly, and pip's
    retries give up within a second or two."""
    import socket
    import time

    deadline = time.monotonic() + limit
    while True:
        if server.poll() is not None:
            pytest.fail(f"the test index's http.server exited with {server.returncode} before it listened")
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError as e:
            if time.monotonic() > deadline:
                pytest.fail(f"the test index at {host}:{port} did not listen within {limit:.0f} s: {e}")
            time.sleep(0.1)


@pytest.fixture()
def with_pip_index(pip_index: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PIP_INDEX_URL", pip_index)
    return pip_index
