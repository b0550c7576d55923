"""The asyncio variants, and copying directory trees in and out."""
from __future__ import annotations

import asyncio
import os
import tempfile

import paddock


def test_async_api(client: paddock.Client) -> None:
    async def main() -> None:
        async with paddock.AsyncClient() as c:
            async with await c.create(timeout=60, labels={"suite": "aio"}) as sb:
                assert (await sb.exec("echo", "hi")).stdout_text == "hi\n"
                p = await sb.start("sh", "-c", "echo a; echo b")
                assert [line async for line in p.stdout] == [b"a\n", b"b\n"]
                assert (await p.wait(60)).exit_code == 0
                await sb.files.write("/workspace/x", "y")
                assert await sb.files.read_text("/workspace/x") == "y"
                assert (await sb.run_code("print(1 + 1)")).stdout == "2\n"
                assert sb.id in [i.id for i in await c.list(labels={"suite": "aio"})]
                # two commands at once on one loop
                r1, r2 = await asyncio.gather(sb.exec("sleep", "1"), sb.exec("sleep", "1"))
                assert r1.exit_code == r2.exit_code == 0

    asyncio.run(main())


def test_trees_go_in_and_out(client: paddock.Client) -> None:
    src = tempfile.mkdtemp()
    os.makedirs(os.path.join(src, "a", "b"))
    for rel, text in {"top.txt": "1", "a/mid.txt": "2", "a/b/deep.txt": "3"}.items():
        with open(os.path.join(src, rel), "w") as f:
            f.write(text)
    os.symlink("/etc/passwd", os.path.join(src, "a", "link"))
    with client.create(timeout=60) as sb:
        sb.files.upload(src, "/workspace/tree")
        assert sb.exec("sh", "-c", "cd /workspace/tree && find . | sort").stdout_text == \
            ".\n./a\n./a/b\n./a/b/deep.txt\n./a/mid.txt\n./top.txt\n"
        out = os.path.join(tempfile.mkdtemp(), "back")
        sb.files.download("/workspace/tree", out)
        with open(os.path.join(out, "a", "b", "deep.txt")) as f:
            assert f.read() == "3"
