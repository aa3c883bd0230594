"""Write several files as one unit: after an interruption either every file is old or, once the
next writing verb has run, every file is new.

1. Each new content is written and fsynced to a temporary file beside its target (mode: that of
   the file it replaces, or 0644 less the umask for a new file).
2. A journal naming every (temporary, target) pair is written atomically at the skill root.
3. The temporaries are renamed over their targets (each rename is atomic), then the journal goes.

An interruption before 2 leaves every target old; after 2, `recover` (run first by every verb
that writes) finishes the renames, and `check` reports the unfinished write until then.

The journal is this tool's own state, never input: a clone can bring one (it is ignored by git,
but a commit can still hold it), so `recover` completes only a journal whose every target is one
of the files a verb writes (WRITABLE), whose every temporary sits beside its target under the name
this module gives it, and whose every temporary on disk still has the sha256 recorded when it was
written. Any other journal is refused — reported, never applied.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
from pathlib import Path, PurePosixPath

from .errors import UsageError
from .safeio import UnsafeFile, inside, parse_json, read_regular

JOURNAL = ".omni-skill-write.json"
JOURNAL_VERSION = 2
MAX_JOURNAL_BYTES = 1024 * 1024
MAX_CURRENT_BYTES = 64 * 1024 * 1024  # far above any file a verb writes (the largest is about 2 MB)
# The files any verb writes, as glob patterns relative to the skill root: nothing else is ever a target.
WRITABLE = (
    "SKILL.md",
    "provenance.json",
    "evidence/**/*.json",
    "references/**/*.md",
    "references/**/*.yaml",
    "references/**/*.yml",
)


class JournalRefused(UsageError):
    """A write journal this tool will not complete: it names a file no verb writes, or a temporary
    that is not the one recorded."""


def writable(rel: str) -> bool:
    """Whether `rel` is a plain relative path to a file some verb writes."""
    if not rel or rel.startswith("/") or "\\" in rel:
        return False
    parts = rel.split("/")
    if any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        return False
    return any(_matches(parts, pattern) for pattern in WRITABLE)


def _matches(parts: list[str], pattern: str) -> bool:
    """Whether the path's parts match the glob pattern; `**` is any number of folders."""
    import fnmatch

    head, *rest = pattern.split("/")
    if head == "**":
        return any(_matches(parts[i:], "/".join(rest)) for i in range(len(parts)))
    if not parts or not fnmatch.fnmatchcase(parts[0], head):
        return False
    if not rest:
        return len(parts) == 1
    return _matches(parts[1:], "/".join(rest))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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


def _temp_pattern(target_name: str) -> re.Pattern[str]:
    return re.compile(rf"^\.{re.escape(target_name)}\.[A-Za-z0-9_]{{6,16}}\.tmp$")


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
    outside = sorted(rel for rel in changed if not writable(rel) or not inside(root, (root / rel).parent))
    if outside:  # the tool's own verbs write only these files; recovery accepts no others
        raise UsageError(f"{outside[0]}: not a file this tool writes; nothing was written")
    staged: list[tuple[Path, Path]] = []
    hashes: list[str] = []
    try:
        for rel, text in changed.items():
            staged.append((_write_temp(root / rel, text), root / rel))
            hashes.append(_sha256(text.encode("utf-8")))
        meanwhile = sorted(
            rel for rel in changed if read is not None and rel in read and _current(root / rel) != read[rel]
        )
        if meanwhile:
            raise ChangedMeanwhile(", ".join(meanwhile))
        journal = {
            "version": JOURNAL_VERSION,
            "renames": [
                {"temp": t.relative_to(root).as_posix(), "target": g.relative_to(root).as_posix(), "sha256": h}
                for (t, g), h in zip(staged, hashes, strict=True)
            ],
        }
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
        if temp.exists() and not temp.is_symlink():
            os.replace(temp, target)
    for parent in {target.parent for _, target in staged}:
        _sync_dir(parent)
    (root / JOURNAL).unlink(missing_ok=True)


def _journal(root: Path) -> list[tuple[str, str, str]] | None:
    """(temporary, target, sha256) of each rename the journal names; None when there is no
    journal; JournalRefused when it is not one this tool can complete."""
    path = root / JOURNAL
    if not path.is_symlink() and not path.exists():
        return None
    try:
        if path.is_symlink():
            raise UnsafeFile("is a symbolic link")
        data = parse_json(read_regular(path, MAX_JOURNAL_BYTES))
        if not isinstance(data, dict) or data.get("version") != JOURNAL_VERSION or set(data) != {"version", "renames"}:
            raise ValueError(f"not a version-{JOURNAL_VERSION} write journal of this tool")
        items = data["renames"]
        if not isinstance(items, list) or not items:
            raise ValueError("names no renames")
        renames = []
        for item in items:
            if not isinstance(item, dict) or set(item) != {"temp", "target", "sha256"}:
                raise ValueError("a rename is not {temp, target, sha256}")
            temp, target, digest = item["temp"], item["target"], item["sha256"]
            if not all(isinstance(v, str) for v in (temp, target, digest)):
                raise ValueError("a rename is not {temp, target, sha256}")
            renames.append((temp, target, digest))
    except (ValueError, OSError) as exc:
        raise JournalRefused(_refusal(f"unreadable ({exc})")) from None
    for temp, target, digest in renames:
        problem = _rename_problem(root, temp, target, digest)
        if problem:
            raise JournalRefused(_refusal(problem))
    return renames


def _rename_problem(root: Path, temp: str, target: str, digest: str) -> str:
    from .safeio import printable

    if not writable(target) or not inside(root, (root / target).parent):
        return f"it targets {printable(target)!r}, which is not a file this tool writes"
    folder, _, name = temp.rpartition("/")
    if folder != target.rpartition("/")[0] or not _temp_pattern(PurePosixPath(target).name).match(name):
        return f"{printable(temp)!r} is not a temporary this tool names for {target}"
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        return f"the hash recorded for {target} is not a sha256"
    path = root / temp
    if not path.is_symlink() and not path.exists():
        return ""  # renamed already
    try:
        if path.is_symlink():
            raise UnsafeFile("is a symbolic link")
        data = read_regular(path, MAX_CURRENT_BYTES)
    except (UnsafeFile, OSError) as exc:
        return f"{temp} {exc}"
    if _sha256(data) != digest:
        return f"{temp} is not the content recorded for {target}"
    return ""


def _refusal(why: str) -> str:
    return (
        f"{JOURNAL}: a write journal this tool will not complete: {why}; nothing was applied. If no "
        "omni-skill write was interrupted here, delete it and the .tmp files it names"
    )


def pending(root: Path) -> list[str]:
    """Targets of an unfinished multi-file write (empty when there is none); JournalRefused for
    a journal that is not this tool's own."""
    renames = _journal(root)
    return [target for _, target, _ in renames or []]


def journal_problem(root: Path) -> str:
    """Why the journal at the root cannot be completed ("" when there is none or it can)."""
    try:
        _journal(root)
    except JournalRefused as exc:
        return str(exc)
    return ""


def recover(root: Path) -> list[str]:
    """Finish an interrupted write: every temporary the journal names still on disk is renamed
    over its target. Returns the targets; JournalRefused (nothing moved) for a journal that is
    not this tool's own."""
    renames = _journal(root)
    if not renames:
        return []
    _apply(root, [(root / temp, root / target) for temp, target, _ in renames])
    return [target for _, target, _ in renames]


def _current(path: Path) -> str | None:
    try:
        return read_regular(path, MAX_CURRENT_BYTES).decode("utf-8")
    except (OSError, UnsafeFile, UnicodeDecodeError):
        return None
