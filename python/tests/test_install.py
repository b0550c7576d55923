"""`pip install ./python` as the README types it, in Pythons that have no `wheel` package and no PyPI: the
SDK's in-tree build backend (python/_build) uses the standard library only."""
from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

SDK = pathlib.Path(__file__).resolve().parents[1]
# Debian's Python (the README's), and the first python3 on the PATH when it is another one (pyenv, here).
PYTHONS = sorted({"/usr/bin/python3", shutil.which("python3") or "/usr/bin/python3"})


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


def test_the_backend_builds_a_wheel_with_the_standard_library_only(tmp_path: pathlib.Path) -> None:
    # -S: no site-packages at all, so neither setuptools nor wheel can be what builds it
    r = run("/usr/bin/python3", "-S", "-c", f"import sys; sys.path.insert(0, {str(SDK / '_build')!r});"
            f" import paddock_build as b; print(b.build_wheel({str(tmp_path)!r}))")
    assert r.returncode == 0, r.stderr
    with zipfile.ZipFile(tmp_path / r.stdout.strip()) as z:
        names = z.namelist()
        assert "paddock/__init__.py" in names and "paddock/py.typed" in names
        assert "paddock/compat/llm_sandbox/security.py" in names
        assert not [n for n in names if "__pycache__" in n]
        meta = z.read("paddock-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Dist: httpx>=0.23" in meta and "Requires-Python: >=3.9" in meta


@pytest.mark.parametrize("python", PYTHONS)
def test_pip_installs_the_sdk_without_wheel_or_pypi(python: str, tmp_path: pathlib.Path) -> None:
    venv = tmp_path / "venv"
    assert run(python, "-m", "venv", str(venv)).returncode == 0
    assert run(str(venv / "bin" / "python"), "-c", "import wheel").returncode != 0, "this venv has wheel"
    # --no-deps: this venv does not see the host's httpx and websockets; the README's venv does
    r = run(str(venv / "bin" / "pip"), "install", "-q", "--no-index", "--no-build-isolation", "--no-deps", str(SDK))
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(str(venv / "bin" / "pip"), "show", "-f", "paddock")
    assert "paddock/compat/llm_sandbox/__init__.py" in r.stdout, r.stdout + r.stderr


def test_the_readme_install_sees_debians_dependencies(tmp_path: pathlib.Path) -> None:
    venv = tmp_path / "venv"
    assert run("/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)).returncode == 0
    r = run(str(venv / "bin" / "pip"), "install", "-q", "--no-index", "--no-build-isolation", str(SDK))
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(str(venv / "bin" / "python"), "-c", "import paddock, paddock.compat.llm_sandbox; print(paddock.Client)")
    assert r.returncode == 0 and "Client" in r.stdout, r.stderr
    assert sys.version_info >= (3, 9)
