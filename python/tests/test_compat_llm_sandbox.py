"""llm-sandbox's documented examples, with only the import changed, against a real daemon."""
from __future__ import annotations

import base64
import os
import tempfile

import pytest

from paddock.compat.llm_sandbox import (ArtifactSandboxSession, FileType, SandboxBackend, SandboxSession,
                                        SecurityPattern, SecurityPolicy, SecurityIssueSeverity)
from paddock.compat.llm_sandbox.exceptions import SandboxTimeoutError, SecurityError, ValidationError


def test_python_session_commands_and_files(client: object) -> None:
    with SandboxSession(lang="python", keep_template=True, verbose=True) as session:
        result = session.run("print('Hello, World!')")
        assert result.stdout == "Hello, World!\n" and result.exit_code == 0 and result.success()
        assert session.execute_command("ls -la").exit_code == 0
        src = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
        src.write("print(6 * 7)\n")
        src.close()
        session.copy_to_runtime(src.name, "/sandbox/data/code.py")
        assert session.execute_command("python3 /sandbox/data/code.py").stdout == "42\n"
        out = os.path.join(tempfile.mkdtemp(), "back.py")
        session.copy_from_runtime("/sandbox/data/code.py", out)
        assert open(out).read() == "print(6 * 7)\n"
        with pytest.raises(SandboxTimeoutError):
            session.run("import time; time.sleep(30)", timeout=2)


def test_other_languages(client: object) -> None:
    with SandboxSession(lang="javascript") as session:
        assert session.run("console.log('Hello, World!')").stdout == "Hello, World!\n"
    with SandboxSession(lang="java", keep_template=True, verbose=True) as session:
        result = session.run("""
public class Main {
    public static void main(String[] args) {
        System.out.println("Hello, World!");
    }
}
""")
        assert result.stdout == "Hello, World!\n", result.stderr


def test_artifact_session_captures_plots(client: object) -> None:
    with ArtifactSandboxSession(lang="python", verbose=True, image="ghcr.io/vndee/sandbox-python-311-bullseye",
                                backend=SandboxBackend.DOCKER) as session:
        code = """
import matplotlib.pyplot as plt
import numpy as np
x = np.linspace(0, 10, 100)
y = np.sin(x)
plt.figure()
plt.plot(x, y)
plt.title('Simple Sine Wave')
plt.show()
"""
        result = session.run(code)
        assert len(result.plots) == 1
        assert result.plots[0].format == FileType.PNG
        assert base64.b64decode(result.plots[0].content_base64)[:4] == b"\x89PNG"


def test_security_policy_and_refused_parameters(client: object) -> None:
    policy = SecurityPolicy(severity_threshold=SecurityIssueSeverity.MEDIUM,
                            patterns=[SecurityPattern(r"os\.system\s*\(", "system calls", SecurityIssueSeverity.HIGH)])
    with SandboxSession(lang="python", security_policy=policy) as session:
        assert session.is_safe("print(1)")[0]
        with pytest.raises(SecurityError):
            session.run("import os\nos.system('id')")
    with pytest.raises(ValidationError) as e:
        SandboxSession(lang="python", runtime_configs={"privileged": True})
    assert "privileged" in str(e.value)
    with pytest.raises(ValidationError):
        SandboxSession(lang="python", commit_container=True)
