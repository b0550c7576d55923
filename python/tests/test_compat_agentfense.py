"""AgentFense's documented examples, with only the import changed, against a real daemon."""
from __future__ import annotations

import os
import tempfile
from datetime import timedelta

import pytest

from paddock.compat.agentfense import Permission, PermissionRule, ResourceLimits, Sandbox, SandboxStatus
from paddock.compat.agentfense.exceptions import CommandExecutionError


@pytest.fixture()
def project() -> str:
    d = tempfile.mkdtemp()
    for rel, text in {"main.py": "print('hi')\n", "secrets/key.pem": "TOPSECRET", ".env": "K=SECRET",
                      "docs/a.md": "doc", "output/.keep": "", "build.log": "junk"}.items():
        os.makedirs(os.path.dirname(os.path.join(d, rel)) or d, exist_ok=True)
        with open(os.path.join(d, rel), "w") as f:
            f.write(text)
    with open(os.path.join(d, ".gitignore"), "w") as f:
        f.write("*.log\n")
    return d


def test_custom_permissions_example(client: object, project: str) -> None:
    with Sandbox.from_local(
        project,
        preset="read-only",
        permissions=[
            PermissionRule(pattern="/output/**", permission=Permission.WRITE),
            PermissionRule(pattern="/secrets/**", permission=Permission.NONE),
        ],
        resources=ResourceLimits(memory_bytes=256 * 1024 * 1024, pids_limit=100),
        labels={"team": "backend"},
    ) as sandbox:
        assert sandbox.status == SandboxStatus.RUNNING
        assert sandbox.run("python3 main.py").stdout == "hi\n"
        listing = sandbox.list_files()
        assert "main.py" in listing and "output/" in listing and "secrets/" not in listing
        assert "build.log" not in listing
        assert "TOPSECRET" not in sandbox.run("cat secrets/key.pem; grep -r TOPSECRET . ; true").stdout
        sandbox.write_file("/workspace/output/result.txt", "done")
        assert sandbox.read_file("/workspace/output/result.txt") == "done"
        with pytest.raises(CommandExecutionError) as e:
            sandbox.run("echo x > main.py", raise_on_error=True)
        assert e.value.exit_code != 0
        assert sandbox.exec("cat", stdin="line1\nline2", timeout=timedelta(minutes=1)).stdout == "line1\nline2"
        assert b"".join(sandbox.exec_stream("echo one; echo two >&2")) == b"one\ntwo\n"
        with sandbox.session() as session:
            session.exec("cd /workspace/output")
            session.exec("export DEBUG=1")
            assert session.exec("pwd; echo $DEBUG").stdout == "/workspace/output\n1\n"
        assert sandbox.list_files(recursive=True) == [".env", ".gitignore", "docs/a.md", "main.py", "output/.keep",
                                                      "output/result.txt"]
        codebase = sandbox.codebase_id
    from paddock import Client
    with Client() as c:
        assert codebase not in [x["name"] for x in c.codebases.list()]


def test_agent_safe_hides_secrets_and_stop_start(client: object, project: str) -> None:
    sandbox = Sandbox.from_local(project, preset="agent-safe", auto_start=False)
    try:
        assert sandbox.status == SandboxStatus.PENDING
        sandbox.start()
        out = sandbox.run("ls -a; cat .env 2>&1; cat docs/a.md").stdout
        assert ".env" not in out.split() and "SECRET" not in out and "doc" in out
        sandbox.stop()
        assert sandbox.status == SandboxStatus.STOPPED
        sandbox.start()
        assert sandbox.run("echo back").stdout == "back\n"
    finally:
        sandbox.destroy()


def test_two_sandboxes_with_different_permissions_example(client: object, project: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # The guide's "Two Sandboxes with Different Permissions", as written with only the import changed;
    # walk_directory is the reader's own helper there (not AgentFense's), so the test gives one.
    def walk_directory(root: str):  # type: ignore[no-untyped-def]
        for d, _, files in os.walk(root):
            for name in files:
                path = os.path.join(d, name)
                with open(path, "rb") as f:
                    yield os.path.relpath(path, root), f.read()

    monkeypatch.chdir(project)
    os.makedirs("project", exist_ok=True)
    with open("project/app.py", "w") as f:
        f.write("print('app')\n")
    from paddock.compat.agentfense import Sandbox, SandboxClient
    # First, create a codebase manually
    client = SandboxClient()
    codebase = client.create_codebase(name="shared-repo", owner_id="team_A")
    # Upload files once
    for file_path, content in walk_directory("./project"):
        client.upload_file(codebase.id, file_path, content)
    # Create read-only sandbox
    with Sandbox.from_codebase(
        codebase_id=codebase.id,
        preset="read-only",
        labels={"purpose": "analysis"},
    ) as sandbox1:
        result1 = sandbox1.run("pylint .")
        assert sandbox1.run("cat app.py").stdout == "print('app')\n"  # the test's: what the sandbox sees
        assert sandbox1.run("echo x > new.txt").exit_code != 0          # read-only
    # Create writable sandbox (separate execution)
    with Sandbox.from_codebase(
        codebase_id=codebase.id,
        preset="development",
        labels={"purpose": "testing"},
    ) as sandbox2:
        result2 = sandbox2.run("pytest --cov")
        assert sandbox2.run("echo x > new.txt").exit_code == 0          # development: writable
    # Codebase still exists after both sandboxes are destroyed
    assert client.get_codebase(codebase.id)["name"] == codebase.id
    client.delete_codebase(codebase.id)  # Clean up manually
    assert result1.command == "pylint ." and result2.command == "pytest --cov"
