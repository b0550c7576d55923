"""llm-sandbox's security policy: patterns and restricted modules checked against code before it runs (a
static screen, as in llm-sandbox; the isolation itself is Paddock's), and its presets
(``get_security_policy("production")``), each of which also sets the sandbox's real limits in Paddock."""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any


class SecurityIssueSeverity(enum.IntEnum):
    SAFE = 0
    LOW = 1
    MEDIUM = 2
    HIGH = 3


@dataclass
class SecurityPattern:
    pattern: str
    description: str = ""
    severity: SecurityIssueSeverity = SecurityIssueSeverity.MEDIUM


@dataclass
class RestrictedModule:
    name: str
    description: str = ""
    severity: SecurityIssueSeverity = SecurityIssueSeverity.MEDIUM


@dataclass
class SecurityPolicy:
    severity_threshold: SecurityIssueSeverity = SecurityIssueSeverity.SAFE
    patterns: list[SecurityPattern] = field(default_factory=list)
    restricted_modules: list[RestrictedModule] = field(default_factory=list)
    # Paddock's side of a policy: what the session's sandbox gets when it is created (``runtime_configs`` and
    # ``pod_manifest`` limits override them). Keys: memory ("512m"), cpus, pids, and network: "open", "none" or
    # "packages" (the package index only: PIP_INDEX_URL's host, else PyPI's two hosts).
    limits: dict[str, Any] = field(default_factory=dict)

    def add_pattern(self, pattern: SecurityPattern) -> None:
        self.patterns.append(pattern)

    def add_restricted_module(self, module: RestrictedModule) -> None:
        self.restricted_modules.append(module)

    def violations(self, code: str) -> list[SecurityPattern]:
        """What in ``code`` is at or above the threshold (comments are not stripped: stricter, not laxer)."""
        found: list[SecurityPattern] = []
        for p in self.patterns:
            if p.severity >= self.severity_threshold and re.search(p.pattern, code):
                found.append(p)
        for m in self.restricted_modules:
            if m.severity >= self.severity_threshold and re.search(
                    rf"(^|[\n;])\s*(import\s+([\w.]+\s*,\s*)*{re.escape(m.name)}\b|from\s+{re.escape(m.name)}\b)", code):
                found.append(SecurityPattern(rf"import {m.name}", m.description or f"restricted module {m.name}",
                                             m.severity))
        return found


_H, _M, _L = SecurityIssueSeverity.HIGH, SecurityIssueSeverity.MEDIUM, SecurityIssueSeverity.LOW


def _patterns(*rows: tuple[str, str, SecurityIssueSeverity]) -> list[SecurityPattern]:
    return [SecurityPattern(p, d, s) for p, d, s in rows]


def _modules(*rows: tuple[str, str, SecurityIssueSeverity]) -> list[RestrictedModule]:
    return [RestrictedModule(n, d, s) for n, d, s in rows]


_SYSTEM = (r"\bos\.(system|popen|exec[lv]p?e?|spawn[lv]p?e?)\s*\(", "System command execution", _H)
_SUBPROCESS = (r"\bsubprocess\.(run|call|check_call|check_output|Popen|getoutput|getstatusoutput)\s*\(",
               "Subprocess execution", _H)
_EVAL = (r"(?<![\w.])(eval|exec)\s*\(", "Dynamic code evaluation", _M)
_IMPORT = (r"\b__import__\s*\(", "Dynamic import", _M)
_DELETE = (r"\b(shutil\.rmtree|os\.(remove|unlink|rmdir|removedirs))\s*\(", "File or directory deletion", _M)
_SOCKET = (r"\bsocket\.(socket|create_connection)\s*\(", "Raw network socket", _M)
_HTTP = (r"\b(requests|httpx|urllib\.request|urllib3)\.(get|post|put|patch|delete|head|request|urlopen|"
         r"PoolManager)\s*\(", "Network request", _M)
_OPEN_WRITE = (r"\bopen\s*\([^)]*['\"][wax]b?\+?['\"]", "File write", _L)

_NET_MODULES = (("socket", "Network sockets", _M), ("requests", "HTTP client", _M), ("httpx", "HTTP client", _M),
                ("urllib", "URL access", _M), ("urllib3", "HTTP client", _M), ("ftplib", "FTP client", _M),
                ("smtplib", "Mail client", _M), ("telnetlib", "Telnet client", _M))
_SYS_MODULES = (("os", "Operating system interface", _H), ("subprocess", "Process creation", _H),
                ("ctypes", "Foreign function interface", _H), ("multiprocessing", "Process creation", _M),
                ("shutil", "File operations", _M), ("pty", "Pseudo-terminals", _H))


def _presets() -> dict[str, SecurityPolicy]:
    return {
        # Only the dangerous calls, and the sandbox's default limits; the network reaches the package index.
        "minimal": SecurityPolicy(_H, _patterns(_SYSTEM, _SUBPROCESS), [], {"network": "packages"}),
        # Day-to-day work: flags what runs other programs; an open network, as a developer's container has.
        "development": SecurityPolicy(_H, _patterns(_SYSTEM, _SUBPROCESS, _DELETE), _modules(("ctypes", "", _H)),
                                      {"network": "open", "memory": "2g"}),
        # Teaching: no other programs, no network, no file deletion; small limits.
        "educational": SecurityPolicy(_M, _patterns(_SYSTEM, _SUBPROCESS, _EVAL, _IMPORT, _DELETE, _SOCKET, _HTTP),
                                      _modules(*_SYS_MODULES[:3], *_NET_MODULES),
                                      {"network": "packages", "memory": "512m", "pids": 128}),
        # Notebooks: the data libraries are fine, other programs and the network are not.
        "data_science": SecurityPolicy(_M, _patterns(_SYSTEM, _SUBPROCESS, _EVAL, _IMPORT, _SOCKET, _HTTP),
                                       _modules(("subprocess", "Process creation", _H), ("ctypes", "", _H),
                                                *_NET_MODULES),
                                       {"network": "packages", "memory": "2g"}),
        # Untrusted code in production: no other programs, no network, no dynamic code; 1 GiB, 256 processes.
        "production": SecurityPolicy(_M, _patterns(_SYSTEM, _SUBPROCESS, _EVAL, _IMPORT, _DELETE, _SOCKET, _HTTP),
                                     _modules(*_SYS_MODULES, *_NET_MODULES),
                                     {"network": "packages", "memory": "1g", "pids": 256}),
        # Everything above from LOW up, file writes included; no network at all (no packages), tight limits.
        "strict": SecurityPolicy(_L, _patterns(_SYSTEM, _SUBPROCESS, _EVAL, _IMPORT, _DELETE, _SOCKET, _HTTP,
                                               _OPEN_WRITE),
                                 _modules(*_SYS_MODULES, *_NET_MODULES, ("importlib", "Dynamic import", _M),
                                          ("pickle", "Unsafe deserialisation", _M)),
                                 {"network": "none", "memory": "256m", "cpus": 1, "pids": 64}),
    }


PRESETS = tuple(_presets())


def get_security_policy(preset_name: str) -> SecurityPolicy:
    """A fresh copy of a preset (``minimal``, ``development``, ``educational``, ``data_science``, ``production``,
    ``strict``): its patterns and restricted modules, and the limits the session's sandbox gets in Paddock."""
    presets = _presets()
    if preset_name not in presets:
        raise ValueError(f"unknown security preset '{preset_name}' (known: {', '.join(presets)})")
    return presets[preset_name]
