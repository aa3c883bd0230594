"""Render reports as text, JSON or Markdown (jinja2 templates) from one report model."""

from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

FORMATS = ("text", "json", "markdown")
ENABLE = "give --source PATH or set VLLM_OMNI_SOURCE to an engine git repository"

_env = Environment(
    loader=PackageLoader("omni_skill", "templates"),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):  # a pydantic model (pydantic itself is not imported for plain data)
        return value.model_dump(mode="json")
    if is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def check_data(report: Any) -> dict[str, Any]:
    return {
        "verb": report.verb,
        "ok": report.ok,
        "revision": report.revision,
        "citations": report.citations,
        "files": report.files,
        "ran": report.ran,
        "skipped": [{"check": name, "what": what, "enable": ENABLE} for name, what in report.skipped],
        "findings": [f.model_dump() for f in report.findings],
    }


def render_page(template: str, **data: Any) -> str:
    """A generated page from its template (the same environment as the reports)."""
    return _env.get_template(template).render(**data)


def render(template: str, data: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(_plain(data), indent=2, ensure_ascii=False) + "\n"
    suffix = "md" if fmt == "markdown" else "txt"
    return _env.get_template(f"{template}.{suffix}.j2").render(**_plain(data))
