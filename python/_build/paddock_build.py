"""Paddock's PEP 517 build backend, in the tree: builds the SDK's wheel (and sdist, and a PEP 660 editable wheel)
with the standard library only, so `pip install ./python` needs neither setuptools nor wheel, no PyPI and no
build isolation, in any Python >= 3.9. It reads the [project] table's name, version, description,
requires-python and dependencies from pyproject.toml (the forms written there: `key = "text"` and a list of
strings); the package is src/paddock with its py.typed."""
from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "paddock"
TAG = "py3-none-any"


def _project() -> dict:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if section is None:
        raise RuntimeError("pyproject.toml has no [project] table")
    body = re.sub(r"(?m)^\s*#.*$", "", section.group(1))
    out: dict = {}
    for key in ("name", "version", "description", "requires-python"):
        m = re.search(rf'(?m)^{re.escape(key)}\s*=\s*"([^"]*)"', body)
        if m:
            out[key] = m.group(1)
    m = re.search(r"(?ms)^dependencies\s*=\s*\[(.*?)\]", body)
    out["dependencies"] = re.findall(r'"([^"]+)"', m.group(1)) if m else []
    for key in ("name", "version"):
        if key not in out:
            raise RuntimeError(f"pyproject.toml: [project] has no {key}")
    return out


def _dist(p: dict) -> str:
    return f"{re.sub(r'[-_.]+', '_', p['name']).lower()}-{p['version']}"


def _metadata(p: dict) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}"]
    if p.get("description"):
        lines.append(f"Summary: {p['description']}")
    if p.get("requires-python"):
        lines.append(f"Requires-Python: {p['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in p["dependencies"]]
    return "\n".join(lines) + "\n"


def _files() -> list[Path]:
    return sorted(f for f in PACKAGE.rglob("*") if f.is_file() and "__pycache__" not in f.parts
                  and f.suffix not in (".pyc", ".pyo"))


def _write_wheel(directory: str, entries: list[tuple[str, bytes]]) -> str:
    p = _project()
    dist = _dist(p)
    info = f"{dist}.dist-info"
    entries = entries + [(f"{info}/METADATA", _metadata(p).encode()),
                         (f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: paddock_build\nRoot-Is-Purelib: true\n"
                                           f"Tag: {TAG}\n".encode())]
    record = []
    name = f"{dist}-{TAG}.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in entries:
            z.writestr(zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0)), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{arc},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        z.writestr(zipfile.ZipInfo(f"{info}/RECORD", date_time=(1980, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    return name


# ---- PEP 517 ----

def get_requires_for_build_wheel(config_settings=None) -> list:
    return []


def get_requires_for_build_sdist(config_settings=None) -> list:
    return []


def get_requires_for_build_editable(config_settings=None) -> list:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings=None) -> str:
    p = _project()
    info = Path(metadata_directory) / f"{_dist(p)}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata(p), encoding="utf-8")
    (info / "WHEEL").write_text(f"Wheel-Version: 1.0\nGenerator: paddock_build\nRoot-Is-Purelib: true\nTag: {TAG}\n",
                                encoding="utf-8")
    return info.name


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings=None, metadata_directory=None) -> str:
    base = PACKAGE.parent
    return _write_wheel(wheel_directory, [(f.relative_to(base).as_posix(), f.read_bytes()) for f in _files()])


def build_editable(wheel_directory: str, config_settings=None, metadata_directory=None) -> str:
    """PEP 660: a wheel whose .pth puts src/ on sys.path, so edits to the tree take effect at once."""
    return _write_wheel(wheel_directory, [("paddock_editable.pth", (str(PACKAGE.parent) + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings=None) -> str:
    p = _project()
    dist = _dist(p)
    name = f"{dist}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for f in [ROOT / "pyproject.toml", Path(__file__).resolve(), *_files()]:
            tar.add(str(f), arcname=f"{dist}/{f.relative_to(ROOT).as_posix()}", recursive=False)
        info = tarfile.TarInfo(f"{dist}/PKG-INFO")
        data = _metadata(p).encode()
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return name
