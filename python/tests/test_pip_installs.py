"""Packages installed inside sandboxes by the adapters, from a PEP 503 index on a test host (PIP_INDEX_URL)."""
from __future__ import annotations

import asyncio

from paddock.compat import bentoml
from paddock.compat.buildfunctions import CPUSandbox
from paddock.compat.llm_sandbox import SandboxSession


def test_llm_sandbox_libraries_and_install(client: object, with_pip_index: str) -> None:
    with SandboxSession(lang="python") as session:
        result = session.run("import paddockdemo; print(paddockdemo.VALUE)", libraries=["paddockdemo"])
        assert result.stdout == "42\n", result.stderr
        session.install(["paddockdemo"])  # installed already: pip says so, no error
        # the sandbox reaches the index's host, nothing else
        assert session.execute_command("python3 -c \"import urllib.request as u; u.urlopen('http://198.18.7.2:8080', timeout=2)\"").exit_code != 0


def test_buildfunctions_requirements(client: object, with_pip_index: str) -> None:
    async def main() -> None:
        sandbox = await CPUSandbox.create({"name": "reqs", "language": "python", "requirements": ["paddockdemo"],
                                           "code": "import paddockdemo\nprint(paddockdemo.VALUE)", "timeout": 120})
        try:
            assert (await sandbox.run()).stdout == "42\n"
        finally:
            await sandbox.delete()

    asyncio.run(main())


def test_bentoml_python_packages_in_an_image(client: object, with_pip_index: str) -> None:
    sb = bentoml.sandbox.create(image=bentoml.images.Image(python_version="3.11").python_packages("paddockdemo"))
    try:
        assert sb.exec("python", "-c", "import paddockdemo; print(paddockdemo.VALUE)").stdout.read() == "42\n"
    finally:
        sb.destroy()
