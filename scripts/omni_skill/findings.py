"""The finding model every check returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError


class Finding(BaseModel):
    """Something that does not hold. Every check returns a list of these."""

    model_config = ConfigDict(frozen=True)

    kind: str
    file: str
    line: int = 0
    message: str
    label: str = ""

    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def one_line(self) -> str:
        return f"{self.location()}: {self.kind}: {self.message}"


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(set(findings), key=lambda f: (f.file, f.line, f.kind, f.label, f.message))


def stale_schema(root: Path, rel: str, expected: str, what: str, refresh: str) -> list[Finding]:
    """A published JSON Schema that is missing or differs from its model's."""
    from .safeio import UnsafeFile, read_regular

    try:
        if read_regular(root / rel, 4 * len(expected) + 4096, root) == expected.encode("utf-8"):
            return []
    except (OSError, UnsafeFile):
        pass
    message = f"the published JSON Schema differs from the {what} model: run `{refresh}`"
    return [Finding(kind="schema-stale", file=rel, message=message)]


def validation_findings(rel: str, error: ValidationError, kind: str) -> list[Finding]:
    """One finding per pydantic error: the field path and the reason."""
    return [Finding(kind=kind, file=rel, message=validation_message(e)) for e in error.errors()]


def validation_message(error: Any) -> str:
    return f"{'.'.join(str(p) for p in error['loc']) or '(top)'}: {error['msg']}"
