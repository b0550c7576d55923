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
    c = paddock.Client()
    yield c
    c.close()
