"""`provenance.json`: the pinned engine revision and how it was last verified."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from .index import REPOSITORY_URL
from .safeio import read_json
from .source import BlobError, Source

PROVENANCE_PATH = "provenance.json"

# Where the engine states the vLLM it builds against, most authoritative first.
REQUIREMENT_FILES = ("requirements/common.txt", "requirements/cuda.txt", "pyproject.toml", "setup.py")
REQUIREMENT_RE = re.compile(r"""^\s*["']?(vllm\s*(?:==|>=|~=|<=|<|>)\s*[0-9][^"',;\s]*)""", re.IGNORECASE)
BASE_IMAGE_RE = re.compile(r"vllm/vllm-openai:v([0-9][0-9A-Za-z.+-]*)")


class Companion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    package: str = "vllm"
    requirement: str = Field(description="the requirement as the engine states it, e.g. vllm==0.26.0")
    source: str = Field(description="file:line of the engine where it is stated")


class Verification(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool_version: str
    citations: int = Field(description="distinct labels verified")
    files: int = Field(description="distinct engine files cited")
    result: str = Field(description="verified, or findings")


class Provenance(BaseModel):
    model_config = ConfigDict(extra="forbid")

    repository: str = REPOSITORY_URL
    revision: str = Field(pattern=r"^[0-9a-f]{40}$")
    commit_date: str
    companion: Companion | None = None
    verification: Verification | None = None


def load_provenance(root: Path) -> Provenance | None:
    try:
        data = read_json(root / PROVENANCE_PATH)
    except FileNotFoundError:
        return None
    return Provenance.model_validate(data)


def companion_requirement(source: Source) -> Companion | None:
    """The vLLM requirement the engine declares at the revision: requirement files first,
    then the CUDA image's `vllm/vllm-openai:vX` base (the release it is built on)."""
    candidates = [p for p in REQUIREMENT_FILES if p in source.tree]
    candidates += sorted(p for p in source.tree if p.startswith("requirements/") and p not in candidates)
    for path in candidates:
        for number, line in enumerate(_text(source, path).splitlines(), start=1):
            match = REQUIREMENT_RE.match(line)
            if match:
                return Companion(requirement=re.sub(r"\s+", "", match.group(1)), source=f"{path}:{number}")
    dockerfiles = [p for p in source.tree if p.startswith("docker/Dockerfile")]
    for path in sorted(dockerfiles, key=lambda p: (p != "docker/Dockerfile.cuda", p)):
        for number, line in enumerate(_text(source, path).splitlines(), start=1):
            match = BASE_IMAGE_RE.search(line)
            if match:
                return Companion(requirement=f"vllm=={match.group(1)}", source=f"{path}:{number}")
    return None


def _text(source: Source, path: str) -> str:
    try:
        return source.text(path)
    except (KeyError, BlobError):
        return ""
