"""llm-sandbox's documented examples, with only the import changed, against a real daemon."""
from __future__ import annotations

import base64
import json
import os
import tempfile

import pytest

from paddock.compat.llm_sandbox import (ArtifactSandboxSession, FileType, SandboxBackend, SandboxSession,
                                        SecurityPattern, SecurityPolicy, SecurityIssueSeverity, get_security_policy)
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


# The API reference's "Complete Example" (../shared/seeds/001_*), as written there with only the import changed
# (`from llm_sandbox` -> `from paddock.compat.llm_sandbox`); the seed's copy lost its indentation, restored here
# as in llm-sandbox's docs.
COMPLETE_EXAMPLE = """
from paddock.compat.llm_sandbox import (
    SandboxSession,
    SandboxBackend,
    ArtifactSandboxSession,
    get_security_policy,
    SecurityPolicy,
    SecurityPattern,
    SecurityIssueSeverity
)
from paddock.compat.llm_sandbox.exceptions import SandboxTimeoutError
import base64

# Basic usage
with SandboxSession(lang="python") as session:
    result = session.run("print('Hello, World!')")
    print(result.stdout)

# With timeout configuration
with SandboxSession(
    lang="python",
    execution_timeout=30.0,  # 30 seconds for code execution
    session_timeout=300.0,   # 5 minutes session lifetime
    default_timeout=10.0     # Default timeout for operations
) as session:
    try:
        # This will use the execution_timeout (30s)
        result = session.run("print('Normal execution')")

        # Override timeout for specific execution
        result = session.run(\"\"\"
import time
time.sleep(5)
print('Long operation completed')
\"\"\", timeout=15.0)  # Override with 15 seconds
    except SandboxTimeoutError as e:
        print(f"Operation timed out: {e}")

# With security policy
policy = get_security_policy("production")
policy.add_pattern(SecurityPattern(
    pattern=r"requests\\.get\\(.*internal\\.company",
    description="Internal network access",
    severity=SecurityIssueSeverity.HIGH
))

with SandboxSession(
    lang="python",
    security_policy=policy,
    runtime_configs={
        "cpu_count": 2,
        "mem_limit": "512m",
        "timeout": 30
    }
) as session:
    # Check code safety
    code = "import requests; requests.get('https://api.example.com')"
    is_safe, violations = session.is_safe(code)

    if is_safe:
        result = session.run(code, libraries=["requests"])
        print(result.stdout)
    else:
        print("Code failed security check")

# With artifact extraction
with ArtifactSandboxSession(
    lang="python",
    backend=SandboxBackend.DOCKER
) as session:
    result = session.run(\"\"\"
import matplotlib.pyplot as plt
import numpy as np

x = np.linspace(0, 10, 100)
y = np.sin(x)
plt.plot(x, y)
plt.title('Sine Wave')
plt.show()
\"\"\", libraries=["matplotlib", "numpy"])

    # Save plots
    for i, plot in enumerate(result.plots):
        with open(f"plot_{i}.{plot.format.value}", "wb") as f:
            f.write(base64.b64decode(plot.content_base64))

# Kubernetes backend
with SandboxSession(
    backend=SandboxBackend.KUBERNETES,
    lang="python",
    kube_namespace="default",
    pod_manifest={
        "spec": {
            "containers": [{
                "resources": {
                    "limits": {
                        "memory": "512Mi",
                        "cpu": "1"
                    }
                }
            }]
        }
    }
) as session:
    result = session.run("print('Running in Kubernetes!')")
    print(result.stdout)
"""


def test_the_complete_example(client: object, with_pip_index: str, tmp_path: object,
                              monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # libraries= installs from the test's own index (PIP_INDEX_URL): matplotlib and numpy are there already
    # (the sandbox's Python is the host's Debian one), and the production preset refuses the requests call
    monkeypatch.chdir(tmp_path)  # type: ignore[arg-type]
    exec(compile(COMPLETE_EXAMPLE, "complete_example.py", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out == "Hello, World!\n\nCode failed security check\nRunning in Kubernetes!\n\n"
    with open(os.path.join(str(tmp_path), "plot_0.png"), "rb") as f:
        assert f.read(4) == b"\x89PNG"


def limit(session: SandboxSession) -> int:
    sb = session._sb()
    return int(sb._client._http.call("GET", f"/v1/sandboxes/{sb.id}/usage")["memory_limit_bytes"])


def test_security_presets_set_the_sandboxs_real_limits(client: object) -> None:
    strict = get_security_policy("strict")
    assert not SandboxSession(lang="python", security_policy=strict).is_safe("open('x', 'w').write('1')")[0]
    with SandboxSession(lang="python", security_policy=strict) as session:
        assert limit(session) == 256 << 20
        assert session._sb().info().raw["network"]["mode"] == "none"
        # no network at all: not even the package index
        out = session.execute_command("python3 -c \"import socket; socket.create_connection(('198.18.7.2', 80), 2)\"")
        assert out.exit_code != 0
    production = get_security_policy("production")
    safe, found = SandboxSession(lang="python", security_policy=production).is_safe("import os\nos.system('id')")
    assert not safe and {p.description for p in found} >= {"System command execution"}
    assert SandboxSession(lang="python", security_policy=production).is_safe("import numpy as np\nprint(np.pi)")[0]
    with SandboxSession(lang="python", security_policy=production, runtime_configs={"mem_limit": "384m"}) as session:
        assert limit(session) == 384 << 20  # runtime_configs override the preset's 1g
        network = session._sb().info().raw["network"]
        assert network["mode"] == "allow" and "pypi.org" in json.dumps(network), network
    with pytest.raises(ValueError) as e:
        get_security_policy("paranoid")
    assert "production" in str(e.value)
    with pytest.raises(ValidationError) as v:
        SandboxSession(lang="python", pod_manifest={"spec": {"containers": [{"securityContext": {}}]}})
    assert "securityContext" in str(v.value)
