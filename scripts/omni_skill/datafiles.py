"""Formats of the skill's own data files that need a schema: the search space, the evals and the
native test map (the model catalogue's format is in `catalogue.py`, its checks in `catalogue_checks.py`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


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


TEST_MAP_PATH = "references/extension-validation/test-map.yaml"


class NativeTest(BaseModel):
    """One engine test: its pytest node id, the markers it carries and the hardware they ask for."""

    model_config = ConfigDict(extra="forbid")

    pytest: str = Field(pattern=r"^tests/\S+\.py(::\S+)?$")
    markers: list[str] = Field(min_length=1)
    hardware: Literal["cpu", "gpu", "multi-gpu"]

    @model_validator(mode="after")
    def hardware_follows_markers(self) -> NativeTest:
        """multi-gpu with a `distributed_*` marker, gpu with `gpu`, cpu otherwise."""
        if any(m.startswith("distributed_") for m in self.markers):
            expected = "multi-gpu"
        else:
            expected = "gpu" if "gpu" in self.markers else "cpu"
        if self.hardware != expected:
            raise ValueError(f"hardware is {self.hardware!r} but the markers ask for {expected!r}")
        return self


class Subsystem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    covers: str = Field(min_length=1)
    source: str = Field(pattern=r"^src:", description="the subsystem's owner citation label")
    tests: list[NativeTest] = Field(min_length=1)


class NativeTestMap(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1]
    subsystems: list[Subsystem] = Field(min_length=1)
