"""Modal's Sandbox guide, with only the import changed, against a real daemon."""
from __future__ import annotations

import uuid

import pytest

from paddock.compat import modal


def test_the_guides_examples(client: object) -> None:
    app = modal.App.lookup("my-app", create_if_missing=True)
    sb = modal.Sandbox.create(app=app)
    p = sb.exec("python", "-c", "print('hello')", timeout=3)
    assert p.stdout.read() == "hello\n"
    p = sb.exec("bash", "-c", "for i in {1..3}; do echo $i; sleep 0.1; done", timeout=5)
    assert list(p.stdout) == ["1\n", "2\n", "3\n"]
    sb2 = modal.Sandbox.from_id(sb.object_id)
    assert sb2.exec("echo", "hello").stdout.read() == "hello\n"
    with sb.open("test.txt", "w") as f:
        f.write("Hello World\n")
    with sb.open("test.txt") as f:
        assert f.read() == "Hello World\n"
    p = sb.exec("cat")
    p.stdin.write(b"piped")
    p.stdin.write_eof()
    p.stdin.drain()
    p.wait()
    assert p.returncode == 0
    sb.terminate()


def test_entrypoint_secrets_names_and_volumes(client: object) -> None:
    app = modal.App.lookup("app-" + uuid.uuid4().hex[:6], create_if_missing=True)
    sb = modal.Sandbox.create("sh", "-c", "echo from-entrypoint", app=app, timeout=60)
    assert [line for line in sb.stdout] == ["from-entrypoint\n"]
    sb.wait()
    assert sb.returncode == 0
    sb.terminate()

    secret = modal.Secret.from_dict({"MY_SECRET": "hello"})
    volume = modal.Volume.from_name("vol-" + uuid.uuid4().hex[:6], create_if_missing=True)
    sb = modal.Sandbox.create(secrets=[secret], app=app, name="my-name", volumes={"/data": volume})
    try:
        assert sb.exec("bash", "-c", "echo $MY_SECRET").stdout.read() == "hello\n"
        with pytest.raises(modal.exception.AlreadyExistsError):
            modal.Sandbox.create(app=app, name="my-name")
        assert modal.Sandbox.from_name(app.name, "my-name").object_id == sb.object_id
        assert sb.object_id in [s.object_id for s in modal.Sandbox.list(app_id=app.app_id)]
        assert sb.exec("sh", "-c", "echo v > /data/f && cat /data/f").stdout.read() == "v\n"
    finally:
        sb.terminate()
    with pytest.raises(modal.exception.NotFoundError):
        modal.Sandbox.from_name(app.name, "my-name")
    client.volumes.remove(volume.name)  # type: ignore[attr-defined]
    with pytest.raises(modal.exception.InvalidError) as e:
        modal.Sandbox.create(app=app, gpu="A100")
    assert "gpu" in str(e.value)


def test_tagging(client: object) -> None:
    my_app = modal.App.lookup("tags-" + uuid.uuid4().hex[:6], create_if_missing=True)
    sandbox_v1_1 = modal.Sandbox.create("sleep", "10", app=my_app)
    sandbox_v1_2 = modal.Sandbox.create("sleep", "20", app=my_app)
    try:
        sandbox_v1_1.set_tags({"major_version": "1", "minor_version": "1"})
        sandbox_v1_2.set_tags({"major_version": "1", "minor_version": "2"})
        every = {s.object_id for s in modal.Sandbox.list(app_id=my_app.app_id)}
        assert every == {sandbox_v1_1.object_id, sandbox_v1_2.object_id}
        assert {s.object_id for s in modal.Sandbox.list(app_id=my_app.app_id, tags={"major_version": "1"})} == every
        latest = modal.Sandbox.list(app_id=my_app.app_id, tags={"major_version": "1", "minor_version": "2"})
        assert [s.object_id for s in latest] == [sandbox_v1_2.object_id]
    finally:
        sandbox_v1_1.terminate()
        sandbox_v1_2.terminate()
