"""Write several files so that an interruption leaves the previous ones intact.

Every new content is first written and flushed to a temporary file beside its target; only
when all of them are on disk are they renamed over the targets (each rename is atomic).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def changed_files(root: Path, contents: dict[str, str]) -> list[str]:
    """The relative paths whose content on disk differs from `contents`."""
    return [rel for rel, text in sorted(contents.items()) if _current(root / rel) != text]


def write_files(root: Path, contents: dict[str, str]) -> list[str]:
    """Write the files whose content changed; return their relative paths."""
    changed = {rel: contents[rel] for rel in changed_files(root, contents)}
    staged: list[tuple[Path, Path]] = []
    try:
        for rel, text in changed.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            handle, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
            staged.append((Path(temp_name), target))
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
                stream.write(text)
                stream.flush()
                os.fsync(stream.fileno())
    except BaseException:
        for staged_temp, _ in staged:
            staged_temp.unlink(missing_ok=True)
        raise
    for staged_temp, target in staged:
        os.replace(staged_temp, target)
    return list(changed)


def _current(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
