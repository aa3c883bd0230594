"""The engine as lint-deploy sees it, shipped for every release and the pin, so a user's deploy
file and serve command can be linted without their engine (`lint-deploy --release X`, or the pin
by default). Each entry is a `deploy_model.EngineModel` (names, literal defaults, stage ids and
types: facts, never engine text) and the line span of every label its findings cite.
`omni-skill releases` writes `evidence/lint-models.json`, one engine a line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import UsageError
from .factkinds import PIN

LINT_MODELS_PATH = "evidence/lint-models.json"


class ShippedFiles:
    """Stands in for an engine's files when only the shipped model is at hand: it has none."""

    where = "shipped lint model"

    def text(self, path: str) -> str:
        raise KeyError(path)

    def lines(self, path: str) -> list[str]:
        raise KeyError(path)

    def entry(self, path: str) -> None:
        return None


def spans_of(model: Any, files: Any) -> dict[str, list[int]]:
    """The line span of each label the model's findings cite, in the engine it was built from."""
    from .anchors import AnchorError, locate
    from .labels import LabelError, parse_label

    spans: dict[str, list[int]] = {}
    labels = set(model.labels.values())
    for group in (model.stage_fields, model.deploy_fields, model.topology_fields, model.engine_arg_fields):
        labels |= {f.label for f in group.values() if f.label}
    labels |= {p.label for p in model.pipelines.values() if p.label}
    labels |= {f.label for f in model.flags.values() if f.label}
    for text in sorted(labels):
        try:
            label = parse_label(text)
            span = locate(label, files.text(label.path), quick=True, text_lines=files.lines(label.path))
        except (LabelError, AnchorError, KeyError, OSError, ValueError):
            continue
        spans[text] = [span.start, span.end]
    return spans


def entry_line(engine_id: str, model: Any, spans: dict[str, list[int]]) -> str:
    from pydantic import TypeAdapter

    from .deploy_model import EngineModel

    data = _ordered(TypeAdapter(EngineModel).dump_python(model, mode="python"))
    return json.dumps({"engine": engine_id, "spans": spans, "model": data}, sort_keys=True, separators=(",", ":"))


def _ordered(value: Any) -> Any:
    """JSON-ready data in a stable order: sets sorted (their iteration order varies by run)."""
    if isinstance(value, (set, frozenset)):
        return sorted((_ordered(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, (list, tuple)):
        return [_ordered(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _ordered(v) for k, v in value.items()}
    return value


def dump(revision: str, entries: list[str]) -> str:
    head = json.dumps({"version": 1, "revision": revision}, sort_keys=True)
    return head[:-1] + ', "engines": [\n' + ",\n".join(entries) + "\n]}\n"


def engines(root: Path) -> list[str]:
    """The engine ids the shipped file holds (in file order)."""
    found = []
    for line in _lines(root)[1:]:
        start = line.find('"engine":"')
        if start >= 0:
            found.append(line[start + 10 : line.index('"', start + 10)])
    return found


def _lines(root: Path) -> list[str]:
    path = root / LINT_MODELS_PATH
    from .safeio import read_text
    from .skill import loaded_once  # within `check`, read once for its engines and its pin's model

    try:
        return loaded_once("lint-models lines", path, lambda: read_text(path).splitlines())
    except FileNotFoundError:
        raise UsageError(f"{path}: missing (run `omni-skill releases` to make it)") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: unreadable ({exc})") from None


def load(root: Path, engine_id: str) -> tuple[Any, dict[str, list[int]], str]:
    """(EngineModel, spans, revision) of one shipped engine: the release `engine_id` or the pin."""
    from pydantic import TypeAdapter, ValidationError

    from .deploy_model import EngineModel
    from .safeio import parse_json

    lines = _lines(root)
    try:
        revision = str(parse_json(lines[0][: lines[0].index(', "engines": [')] + "}")["revision"])
    except (IndexError, ValueError, KeyError, TypeError):
        raise UsageError(f"{root / LINT_MODELS_PATH}: not a lint-models file") from None
    marker = f'"engine":"{engine_id}"'
    for number, line in enumerate(lines[1:], start=2):
        if marker not in line:
            continue
        try:
            item = parse_json(line.rstrip(","))
            model = TypeAdapter(EngineModel).validate_python(item["model"])
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            message = str(exc).splitlines()[0]
            raise UsageError(f"{root / LINT_MODELS_PATH}:{number}: not a valid engine model ({message})") from None
        return model, dict(item.get("spans") or {}), revision
    known = ", ".join(engines(root))
    what = "the pin" if engine_id == PIN else f"release {engine_id!r}"
    raise UsageError(f"no shipped lint model for {what}: known are {known} (or give --wheel for that release)")


def check_lint_models(root: Path, revision: str, releases: list[str] | None) -> list[Any]:
    """The shipped lint models: at the pinned revision, one per release of the matrix and the pin,
    each a valid engine model."""
    from .findings import Finding

    if not (root / LINT_MODELS_PATH).exists():
        return []
    refresh = "omni-skill releases --wheel DIR --source ENGINE"
    try:  # the pin's model (the one lint-deploy reads by default) is validated whole
        found = engines(root)
        _, _, shipped_revision = load(root, PIN)
    except UsageError as exc:
        return [Finding(kind="lint-models-invalid", file=LINT_MODELS_PATH, message=str(exc))]
    problems = []
    if found and shipped_revision != revision:
        problems.append(f"built at {shipped_revision[:12]}, the skill is pinned at {revision[:12]}")
    expected = sorted([*(releases or []), PIN]) if releases is not None else None
    if expected is not None and sorted(found) != expected:
        problems.append(f"its engines ({', '.join(found)}) are not the release matrix's releases and the pin")
    return [Finding(kind="lint-models-stale", file=LINT_MODELS_PATH, message=f"{p}: run `{refresh}`") for p in problems]
