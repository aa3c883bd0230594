"""The engine search space (`references/architecture-search/search-space.yaml`): read with pyyaml
alone, so the `search-space` verb runs where only pyyaml is installed; validated against its
schema (`datafiles.SearchSpace`, pydantic) by `check` (from the document it composed) and, when
pydantic is there, by the verb."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .yamlcheck import plain_data

if TYPE_CHECKING:
    from .datafiles import SearchSpace
    from .findings import Finding

SEARCH_SPACE_PATH = "references/architecture-search/search-space.yaml"
STAGE_TYPES = ("llm_ar", "llm_generation", "diffusion", "all")


MAX_DATA_BYTES = 1024 * 1024  # as for every skill file (skill.MAX_FILE_BYTES)


def read_search_space(root: Path) -> tuple[Any, tuple[int, str] | None]:
    """The file's YAML data, or (None, (line, why)) when it cannot be read as plain data (line 0
    when unknown). (None, None) when the skill has no search space."""
    path = root / SEARCH_SPACE_PATH
    if not path.exists() and not path.is_symlink():
        return None, None
    from .safeio import UnsafeFile, read_regular

    try:
        text = read_regular(path, MAX_DATA_BYTES, root).decode("utf-8")
    except UnsafeFile as exc:
        return None, (0, f"{exc}: not read")
    except UnicodeDecodeError as exc:
        return None, (0, f"not valid UTF-8 (byte {exc.start})")
    data, problems = plain_data(text)
    return data, problems[0] if problems else None


def validate_search_space(data: Any) -> tuple[SearchSpace | None, list[Finding]]:
    """The search space read from the file's data, or what is wrong with it (needs pydantic)."""
    from pydantic import ValidationError

    from .datafiles import SearchSpace
    from .findings import Finding, validation_findings

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


def select(data: Any, stage_type: str | None, scope: str | None) -> list[dict[str, Any]]:
    """The settings (as written in the file) that apply to a stage type and scope."""
    settings = data.get("settings") if isinstance(data, dict) else None
    chosen = []
    for setting in settings if isinstance(settings, list) else []:
        if not isinstance(setting, dict):
            continue
        types = setting.get("stage_types") or []
        if stage_type and stage_type not in types and "all" not in types:
            continue
        if scope and setting.get("scope") != scope:
            continue
        chosen.append(setting)
    return chosen
