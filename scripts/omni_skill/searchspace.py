"""The engine search space (`references/architecture-search/search-space.yaml`) and evals formats."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .anchors.yaml_keys import LOADER
from .findings import Finding

SEARCH_SPACE_PATH = "references/architecture-search/search-space.yaml"
STAGE_TYPES = ("llm_ar", "llm_generation", "diffusion", "all")


class Setting(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    scope: Literal["per-stage", "pipeline", "diffusion", "env", "cli"]
    source: str = Field(pattern=r"^src:", description="owner citation label")
    param: str | None = None
    read_by: list[str] = Field(min_length=1, description="labels of the code that reads the value")
    default: Any = None
    default_note: str | None = None
    type: Literal["int", "float", "bool", "str", "enum", "list", "dict", "path"]
    allowed: str | None = None
    values: list[Any] | None = None
    stage_types: list[Literal["llm_ar", "llm_generation", "diffusion", "all"]] = Field(min_length=1)
    interactions: list[str] = Field(default_factory=list)
    label: Literal["existing setting", "implementation change", "research extension"]
    measure: str = Field(min_length=1)


class SearchSpace(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1]
    settings: list[Setting]


class Eval(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    expected: str = Field(min_length=1)
    labels: list[str] = Field(min_length=1)


class EvalFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    branch: Literal["architecture-search", "serving-tuning", "extension-validation"]
    evals: list[Eval]


def validation_findings(rel: str, error: ValidationError, kind: str) -> list[Finding]:
    return [
        Finding(kind=kind, file=rel, message=f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}")
        for e in error.errors()
    ]


def load_search_space(root: Path) -> tuple[SearchSpace | None, list[Finding]]:
    path = root / SEARCH_SPACE_PATH
    if not path.exists():
        return None, []
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 0
        return None, [Finding(kind="yaml-invalid", file=SEARCH_SPACE_PATH, line=line, message="not valid YAML")]
    try:
        space = SearchSpace.model_validate(data)
    except ValidationError as exc:
        return None, validation_findings(SEARCH_SPACE_PATH, exc, "search-space-invalid")
    names = [s.name for s in space.settings]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    findings = [
        Finding(kind="search-space-invalid", file=SEARCH_SPACE_PATH, message=f"setting {n!r} is listed twice")
        for n in duplicates
    ]
    for setting in space.settings:
        if setting.default is not None and setting.default_note:
            findings.append(
                Finding(
                    kind="search-space-invalid",
                    file=SEARCH_SPACE_PATH,
                    message=f"setting {setting.name!r} has both default and default_note",
                )
            )
    return space, findings


def select(space: SearchSpace, stage_type: str | None, scope: str | None) -> list[dict[str, Any]]:
    chosen = []
    for setting in space.settings:
        if stage_type and stage_type not in setting.stage_types and "all" not in setting.stage_types:
            continue
        if scope and setting.scope != scope:
            continue
        chosen.append(setting.model_dump(mode="json", exclude_unset=True))
    return chosen
