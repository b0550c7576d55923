"""llm-sandbox's security policy: patterns and restricted modules checked against code before it runs (a
static screen, as in llm-sandbox; the isolation itself is Paddock's)."""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field


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
                    rf"(^|\n)\s*(import\s+{re.escape(m.name)}\b|from\s+{re.escape(m.name)}\b)", code):
                found.append(SecurityPattern(rf"import {m.name}", m.description or f"restricted module {m.name}",
                                             m.severity))
        return found
