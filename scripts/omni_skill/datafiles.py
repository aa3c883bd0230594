"""Formats of the skill's own data files that need a schema: the search space and the evals."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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
