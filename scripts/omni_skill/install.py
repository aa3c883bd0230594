"""`install` into the folder an agent discovers skills in, and `package` as a .skill zip.

Only the runtime files travel: SKILL.md, references/, evidence/, provenance.json and the
helper scripts. Tests, evals, caches and development files stay behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from .errors import UsageError
from .skill import SKILL_FILE
from .structure import SKILL_NAME, parse_frontmatter
from .writes import current_umask, mode_for

RUNTIME = (SKILL_FILE, "references", "evidence", "provenance.json", "scripts")
AGENT_DIRS = {"claude": ".claude/skills", "codex": ".agents/skills", "cursor": ".cursor/skills"}
SKIP_NAMES = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
SKIP_SUFFIXES = (".pyc", ".pyo", ".tmp")
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def runtime_files(root: Path) -> list[str]:
    """Relative paths of every runtime file, sorted; symlinks are refused."""
    files: list[str] = []
    for top in RUNTIME:
        path = root / top
        if not path.exists():
            if top in (SKILL_FILE, "scripts"):
                raise UsageError(f"{path}: missing, cannot install or package this skill")
            continue
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*"))
        for candidate in candidates:
            rel = candidate.relative_to(root)
            if any(part in SKIP_NAMES or part.endswith(".egg-info") for part in rel.parts):
                continue
            if candidate.is_symlink():
                raise UsageError(f"{candidate}: is a symbolic link; the skill must ship real files")
            if candidate.is_file() and not candidate.name.endswith(SKIP_SUFFIXES):
                files.append(rel.as_posix())
    return files


def destination(agent: str, scope: str, dest: Path | None) -> Path:
    """Where the skill folder goes. `dest` stands in for the home (user) or project folder."""
    base = dest.expanduser() if dest is not None else (Path.home() if scope == "user" else Path.cwd())
    return base / AGENT_DIRS[agent] / SKILL_NAME


def _installed_name(target: Path) -> str | None:
    try:
        return str(parse_frontmatter((target / SKILL_FILE).read_text(encoding="utf-8")).data.get("name"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def install(root: Path, target: Path, force: bool, dry_run: bool) -> list[str]:
    """Copy the runtime files into `target` as real files; refuse to replace another skill."""
    here, there = root.resolve(), target.resolve()
    if there == here:
        raise UsageError(f"{target}: is the skill's own folder")
    if there.is_relative_to(here):
        raise UsageError(f"{target}: is inside the skill itself; install it somewhere else")
    if here.is_relative_to(there):
        raise UsageError(f"{target}: holds the skill being installed; install it somewhere else")
    files = runtime_files(root)
    if target.exists() and not force:
        name = _installed_name(target)
        if name != SKILL_NAME:
            what = f"the skill {name!r}" if name else "something that is not this skill"
            raise UsageError(f"{target}: holds {what}; pass --force to replace it")
    if dry_run:
        return files
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(target)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f"{_staging_prefix(target)}{os.getpid()}-"))
    old = target.parent / f".{target.name}.old"
    try:
        os.chmod(staging, 0o777 & ~current_umask())  # mkdtemp makes it 0700: teammates must read a project install
        for rel in files:
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, staging / rel, follow_symlinks=False)
        _remove(old)  # a leftover of an earlier interrupted install, whatever it is
        if target.exists() or target.is_symlink():
            os.replace(target, old)  # a symbolic link is moved itself, never followed
            os.replace(staging, target)
        else:
            os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        _remove(old)
    return files


def _staging_prefix(target: Path) -> str:
    return f".{target.name}.install-"


def _remove_stale_staging(target: Path) -> None:
    """Remove the staging folders an interrupted install left beside the target: named by this
    module (`.NAME.install-PID-XXXX`) for a process that no longer runs."""
    prefix = _staging_prefix(target)
    for sibling in target.parent.iterdir():
        if not sibling.name.startswith(prefix) or sibling.is_symlink() or not sibling.is_dir():
            continue
        pid = sibling.name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(sibling, ignore_errors=True)


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except OSError:
        return True  # another user's process: leave it alone
    return True


def _remove(path: Path) -> None:
    """Delete a file, a symbolic link (not what it points to) or a folder tree."""
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists():  # a FIFO, socket or device node
        path.unlink(missing_ok=True)


def package(root: Path, output: Path) -> list[str]:
    """A deterministic zip rooted at `vllm-omni/` holding the runtime files."""
    files = runtime_files(root)
    if output.is_symlink() or (output.exists() and not output.is_file()):
        kind = "a symbolic link" if output.is_symlink() else "a folder" if output.is_dir() else "not a regular file"
        raise UsageError(f"{output}: is {kind}; give a file name for the package")
    output.parent.mkdir(parents=True, exist_ok=True)
    mode = mode_for(output)
    handle, temp = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.", suffix=".tmp")
    os.fchmod(handle, mode)
    os.close(handle)
    try:
        with zipfile.ZipFile(temp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for rel in files:
                info = zipfile.ZipInfo(f"{SKILL_NAME}/{rel}", date_time=ZIP_TIME)
                mode = 0o755 if os.access(root / rel, os.X_OK) else 0o644
                info.external_attr = (0o100000 | mode) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, (root / rel).read_bytes())
        os.replace(temp, output)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return files
