"""The evidence index (`evidence/index.json`): one record per distinct label, deterministic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from .safeio import parse_json, read_json

INDEX_PATH = "evidence/index.json"
SCHEMA_PATH = "evidence/index.schema.json"
REPOSITORY_URL = "https://github.com/vllm-project/vllm-omni"


class UsePlace(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str = Field(description="skill file that cites the label, relative to the skill root")
    line: int = Field(ge=1, description="1-based line of the citation")


class EvidenceRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(description="the citation label, e.g. src:vllm_omni/x.py::Class.method")
    path: str = Field(description="repository-relative path of the cited file")
    anchor: str = Field(description="anchor part of the label; empty for a whole file")
    kind: str = Field(description="python, subspan, yaml, markdown, lines or file")
    start: int = Field(ge=1, description="first line of the span in the file, 1-based (a sub-span: its absolute line)")
    end: int = Field(ge=1, description="last line of the span, inclusive")
    blob: str = Field(pattern=r"^[0-9a-f]{40}$", description="git blob SHA of the file at the revision")
    fingerprint: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the span, trailing whitespace stripped")
    uses: list[UsePlace] = Field(description="every place the label is cited, sorted")
    line_hashes: str = Field(
        default="",
        description="line ranges and sub-spans only: a short hash of each cited line (indentation ignored), "
        "space-separated, to re-find the range by its lines where its text was edited; absent for other kinds",
    )

    code_fingerprint: str = Field(
        default="",
        description="a hash of what the span's code does, blind to docstrings, comments and layout (Python: "
        "its AST, after a quick hash of its names; YAML: its data; lines of Python: their tokens): a release "
        "whose span has the same one differs only cosmetically; absent where there is none",
    )

    @model_serializer(mode="wrap")
    def _without_empty_hashes(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for optional in ("line_hashes", "code_fingerprint"):
            if not data.get(optional):
                data.pop(optional, None)
        return data


class EvidenceIndex(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(default=1, description="format version of this file")
    repository: str = Field(default=REPOSITORY_URL)
    revision: str = Field(pattern=r"^[0-9a-f]{40}$", description="engine commit every record was resolved at")
    records: list[EvidenceRecord]

    def by_label(self) -> dict[str, EvidenceRecord]:
        return {record.label: record for record in self.records}


def label_disagrees(record: EvidenceRecord) -> bool:
    """Whether the record's path, anchor or kind differ from what its label says; LabelError
    when the label does not parse."""
    from .labels import parse_label

    label = parse_label(record.label)
    return (label.path, label.anchor, label.kind) != (record.path, record.anchor, record.kind)


def permalink(repository: str, revision: str, record: EvidenceRecord) -> str:
    url = f"{repository}/blob/{revision}/{record.path}"
    if record.kind == "file":
        return url
    if record.start == record.end:
        return f"{url}#L{record.start}"
    return f"{url}#L{record.start}-L{record.end}"


def dump_json(model: BaseModel) -> str:
    return json.dumps(model.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def schema_json() -> str:
    schema = EvidenceIndex.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "vllm-omni skill evidence index"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def strict_json(text: str) -> Any:
    """JSON data through the one strict reader (`safeio.parse_json`)."""
    return parse_json(text)


def load_index(root: Path) -> EvidenceIndex | None:
    try:
        data = read_json(root / INDEX_PATH)
    except FileNotFoundError:
        return None
    return EvidenceIndex.model_validate(data)
