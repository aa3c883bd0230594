"""Write several files as one unit: after an interruption either every file is old or, once the
next writing verb has run, every file is new.

1. Each new content is written and fsynced to a temporary file beside its target (mode: that of
   the file it replaces, or 0644 less the umask for a new file).
2. A journal naming every (temporary, target) pair is written atomically at the skill root.
3. The temporaries are renamed over their targets (each rename is atomic), then the journal goes.

An interruption before 2 leaves every target old; after 2, `recover` (run first by every verb
that writes) finishes the renames, and `check` reports the unfinished write until then.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path

JOURNAL = ".omni-skill-write.json"


def changed_files(root: Path, contents: dict[str, str]) -> list[str]:
    """The relative paths whose content on disk differs from `contents`."""
    return [rel for rel, text in sorted(contents.items()) if _current(root / rel) != text]


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def mode_for(target: Path) -> int:
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~current_umask()


def _write_temp(target: Path, text: str) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    temp = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
            stream.flush()
            os.fchmod(stream.fileno(), mode_for(target))
            os.fsync(stream.fileno())
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def _sync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def snapshot(root: Path, rels: list[str]) -> dict[str, str | None]:
    """The current text of each file (None when absent or unreadable), to compare at write time."""
    return {rel: _current(root / rel) for rel in rels}


class ChangedMeanwhile(Exception):
    """A file the verb read was changed by someone else before the verb wrote it."""


def write_files(root: Path, contents: dict[str, str], read: dict[str, str | None] | None = None) -> list[str]:
    """Write the files whose content changed, as one unit; return their relative paths. With
    `read` (the texts the verb computed from), refuse to write over a file edited meanwhile."""
    recover(root)
    changed = {rel: contents[rel] for rel in changed_files(root, contents)}
    if not changed:
        return []
    staged: list[tuple[Path, Path]] = []
    try:
        for rel, text in changed.items():
            staged.append((_write_temp(root / rel, text), root / rel))
        meanwhile = sorted(
            rel for rel in changed if read is not None and rel in read and _current(root / rel) != read[rel]
        )
        if meanwhile:
            raise ChangedMeanwhile(", ".join(meanwhile))
        journal = {"renames": [[str(t.relative_to(root)), str(g.relative_to(root))] for t, g in staged]}
        journal_temp = _write_temp(root / JOURNAL, json.dumps(journal, indent=1) + "\n")
        os.replace(journal_temp, root / JOURNAL)
        _sync_dir(root)
    except BaseException:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
        raise
    _apply(root, staged)
    return list(changed)


def _apply(root: Path, staged: list[tuple[Path, Path]]) -> None:
    for temp, target in staged:
        if temp.exists():
            os.replace(temp, target)
    for parent in {target.parent for _, target in staged}:
        _sync_dir(parent)
    (root / JOURNAL).unlink(missing_ok=True)


def pending(root: Path) -> list[str]:
    """Targets of an unfinished multi-file write (empty when there is none)."""
    try:
        data = json.loads((root / JOURNAL).read_text(encoding="utf-8"))
        return [str(target) for _, target in data["renames"]]
    except FileNotFoundError:
        return []
    except (ValueError, KeyError, TypeError):
        return ["(unreadable journal)"]


def recover(root: Path) -> list[str]:
    """Finish an interrupted write: every temporary the journal names still on disk is renamed
    over its target. Returns the targets; a journal that is not ours is left alone."""
    try:
        data = json.loads((root / JOURNAL).read_text(encoding="utf-8"))
        pairs = [(root / temp, root / target) for temp, target in data["renames"]]
    except FileNotFoundError:
        return []
    except (ValueError, KeyError, TypeError):
        return []
    safe = [(t, g) for t, g in pairs if _inside(root, t) and _inside(root, g) and t.name.startswith(".")]
    if len(safe) != len(pairs):
        return []
    _apply(root, safe)
    return [str(g.relative_to(root)) for _, g in safe]


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return ".." not in path.relative_to(root).parts


def _current(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
