"""The core API against a real daemon (runc and runsc sandboxes)."""
from __future__ import annotations

import os
import tempfile
import uuid

import pytest

import paddock


def test_exec_files_and_errors(client: paddock.Client) -> None:
    with client.create(memory="256m", timeout=120, labels={"suite": "py"}) as sb:
        r = sb.exec("sh", "-c", "echo out; echo err >&2; exit 3", env={"A": "1"})
        assert (r.exit_code, r.stdout_text, r.stderr_text) == (3, "out\n", "err\n")
        assert sb.exec("cat", stdin="piped").stdout_text == "piped"
        assert sb.exec("sh", "-c", "echo $A; pwd", env={"A": "x"}, cwd="/tmp").stdout_text == "x\n/tmp\n"
        sb.files.write("/workspace/a.txt", "hello")
        assert sb.files.read_text("/workspace/a.txt") == "hello"
        sb.files.mkdir("/workspace/d")
        sb.files.move("/workspace/a.txt", "/workspace/d/b.txt")
        assert [f.path for f in sb.files.list("/workspace/d")] == ["/workspace/d/b.txt"]
        assert sb.files.exists("/workspace/d/b.txt") and not sb.files.exists("/workspace/a.txt")
        sb.files.remove("/workspace/d", recursive=True)
        with pytest.raises(paddock.NotFoundError) as e:
            sb.files.read("/workspace/nothing")
        assert e.value.code == "NOT_FOUND"
        assert sb.id in [i.id for i in client.list(labels={"suite": "py"})]
        assert client.get(sb.id).info().state == "RUNNING"
    with pytest.raises(paddock.NotFoundError):
        client.get("sb-aaaaaaaaaaaaaaaaaaaaaaaaaa")
    with pytest.raises(paddock.InvalidArgumentError) as bad:
        client.create(memory="lots")
    assert "memory" in str(bad.value)


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_streaming_exec_with_stdin(client: paddock.Client, runtime: str) -> None:
    with client.create(runtime=runtime, timeout=120) as sb:
        p = sb.start("sh", "-c", "while read l; do echo got-$l; done; echo bye >&2")
        p.write("a\nb\n")
        p.close_stdin()
        assert list(p.stdout) == [b"got-a\n", b"got-b\n"]
        assert p.stderr.read() == b"bye\n"
        assert p.wait(60).exit_code == 0
        killed = sb.start("sleep", "600")
        killed.kill()
        assert killed.wait(60).outcome != "EXITED"


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_a_terminal_and_its_size(client: paddock.Client, runtime: str) -> None:
    with client.create(runtime=runtime, timeout=120) as sb:
        p = sb.start("sh", "-c", "stty size; echo err >&2; read x; stty size", terminal=(100, 30))
        lines = iter(p.stdout)
        assert next(lines) == b"30 100\r\n"
        # The terminal echoes "go" as soon as it is written: wait for "err" first, or the two race.
        assert next(lines) == b"err\r\n"
        p.resize(132, 50)
        p.write("go\n")
        assert b"".join(lines) == b"go\r\n50 132\r\n"
        assert p.stderr.read() == b""
        assert p.wait(60).exit_code == 0


def test_names_code_contexts_and_pause(client: paddock.Client) -> None:
    name = "py-" + uuid.uuid4().hex[:8]
    with client.create(runtime="runsc", name=name, timeout=180) as sb:
        assert client.get_by_name(name).id == sb.id
        sb.run_code("x = 41", context="c1")
        assert sb.pause() == "CHECKPOINTED"
        sb.resume()
        r = sb.run_code("print(x + 1)", context="c1")
        assert r.stdout == "42\n" and r.error is None
        err = sb.run_code("1/0", context="c1")
        assert err.error is not None and err.error["name"] == "ZeroDivisionError"
        assert sb.run_code("console.log(6*7)", language="javascript").stdout == "42\n"


def test_volumes_and_codebases(client: paddock.Client) -> None:
    vol, cb = "pyvol-" + uuid.uuid4().hex[:6], "pycb-" + uuid.uuid4().hex[:6]
    client.volumes.create(vol, "32m")
    src = tempfile.mkdtemp()
    os.makedirs(os.path.join(src, "secrets"))
    with open(os.path.join(src, "secrets", "k"), "w") as f:
        f.write("TOPSECRET")
    with open(os.path.join(src, "main.py"), "w") as f:
        f.write("code")
    os.makedirs(os.path.join(src, "out"))
    client.codebases.create(cb, src)
    try:
        with client.create(volumes={vol: "/data"}, codebase=cb, preset="read-only",
                           permissions=["secrets/**:none", "out/**:write"], timeout=120) as sb:
            assert sb.exec("sh", "-c", "echo kept > /data/f; cat /workspace/main.py; ls /workspace").stdout_text \
                == "codemain.py\nout\n"
            assert sb.exec("sh", "-c", "echo r > /workspace/out/r; echo x > /workspace/main.py").exit_code != 0
            assert sb.codebase_diff() == [{"path": "out/r", "kind": "added", "writable": True}]
            with pytest.raises(paddock.FailedPreconditionError):
                client.volumes.remove(vol)
        with client.create(volumes=[{"name": vol, "path": "/data", "read_only": True}], timeout=60) as sb:
            assert sb.exec("cat", "/data/f").stdout_text == "kept\n"
    finally:
        client.volumes.remove(vol)
        client.codebases.remove(cb)


def test_idle_timeout(client: paddock.Client) -> None:
    import time
    sb = client.create(timeout=120, idle_timeout=2)
    assert sb.exec("echo", "hi").exit_code == 0
    for _ in range(50):
        if sb.info().state == "STOPPED":
            break
        time.sleep(0.2)
    assert sb.info().state == "STOPPED" and sb.info().stop_reason == "TIMEOUT"


def test_bad_input_is_a_clear_exception(client: paddock.Client) -> None:
    with pytest.raises(paddock.PermissionDeniedError):
        paddock.Client(url=client._http.url, token="wrong-token-0123456789").list()
    with pytest.raises(paddock.UnavailableError) as e:
        paddock.Client(url="http://127.0.0.1:9", token="t").list()
    assert "cannot reach" in str(e.value)
    with client.create(timeout=60) as sb:
        r = sb.exec("printf", "\\377\\376ok")
        assert r.stdout == b"\xff\xfeok" and r.stdout_text.endswith("ok")
        p = sb.start("printf", "\\377\\n")
        assert list(p.stdout) == [b"\xff\n"]
        assert p.wait(30).exit_code == 0


def test_a_private_daemon_leaves_nothing_in_tmp(client: paddock.Client) -> None:
    """A private daemon's directory (its data and log, under the temporary directory) goes with it (issue 36, item 5)."""
    from paddock._client import _LocalDaemon

    daemon = _LocalDaemon()
    directory = daemon._dir
    assert os.path.isdir(os.path.join(directory, "data"))
    daemon._stop()
    assert daemon._proc.poll() is not None
    assert not os.path.exists(directory), os.listdir(directory)
