"""Images built from Python, and BentoML's and Buildfunctions' examples, against a real daemon."""
from __future__ import annotations

import asyncio
import os
import tempfile
import uuid

import pytest

import paddock
from paddock.compat import bentoml
from paddock.compat.buildfunctions import Buildfunctions, BuildfunctionsError, CPUSandbox, GPUSandbox


def test_an_image_built_from_steps(client: paddock.Client) -> None:
    local = tempfile.mkdtemp()
    with open(os.path.join(local, "conf.ini"), "w") as f:
        f.write("[x]\n")
    image = (paddock.Image.debian("bookworm", slim=True).run("echo built > /built.txt").env("MODE", "py")
             .workdir("/app").copy(os.path.join(local, "conf.ini"), "conf.ini"))
    name = client.images.build(image)
    lines: list[str] = []
    assert client.images.build(image, on_log=lines.append) == name  # the same steps: the daemon's cache
    assert lines, "the build streamed no event"
    with client.create(image=name, timeout=60) as sb:
        assert sb.exec("sh", "-c", "cat /built.txt; echo $MODE; cat /app/conf.ini").stdout_text == "built\npy\n[x]\n"


def test_bentoml(client: paddock.Client) -> None:
    name = "bento-" + uuid.uuid4().hex[:6]
    sb = bentoml.sandbox.create(envs={"HF_TOKEN": "abdef"}, labels={"foo": "bar"}, name=name)
    sb.wait_until_ready(log_polling=True)
    result = sb.exec("python", "-c", "import sys;print(sys.version_info[0])")
    assert result.stdout.read() == "3\n"
    result = sb.exec("sh", "-c", "echo $HF_TOKEN; echo two")
    assert list(result.stdout) == ["abdef\n", "two\n"]
    assert bentoml.sandbox.get(name=name).id == sb.id
    bentoml.sandbox.destroy(name=name)
    with pytest.raises(bentoml.BentoMLException) as e:
        bentoml.sandbox.create(image=bentoml.images.Image(python_version="3.12"))
    assert "python_version" in str(e.value)
    with pytest.raises(bentoml.BentoMLException) as e:
        bentoml.BentoCloudClient().sandbox.create(cluster="gcp-us-central")
    assert "cluster" in str(e.value)


def test_buildfunctions(client: paddock.Client) -> None:
    async def main() -> None:
        await Buildfunctions({"apiToken": "ignored"})
        sandbox = await CPUSandbox.create({"name": "text-analyzer", "runtime": "node",
                                           "code": "console.log('Hello from Sandbox!');", "memory": "512MB",
                                           "timeout": 120})
        try:
            result = await sandbox.run()
            assert result.stdout == "Hello from Sandbox!\n" and result.response == result.stdout
        finally:
            await sandbox.delete()
        script = os.path.join(tempfile.mkdtemp(), "handler.py")
        with open(script, "w") as f:
            f.write("print(sorted([3, 1, 2]))\n")
        sandbox = await CPUSandbox.create({"name": "reward-eval", "language": "python", "code": script,
                                           "memory": "512MB", "timeout": 30})
        try:
            assert (await sandbox.run()).response == "[1, 2, 3]\n"
        finally:
            await sandbox.delete()
        with pytest.raises(BuildfunctionsError) as e:
            await GPUSandbox.create({"name": "gpu", "memory": 10000, "language": "python"})
        assert "GPU" in str(e.value)

    asyncio.run(main())
