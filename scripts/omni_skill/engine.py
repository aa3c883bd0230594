"""The engine a verb reads: git at a revision, the installed package, a folder, a wheel.

Every verb that reads an engine gets it here: the maintainers' verbs (check, resolve, bump,
releases) the engine's git repository at a revision (`pinned_git`, `require_git`) and release
wheels (`release_wheels`); the user's verbs (drift, show, facts, since, lint-deploy) any of git,
the installed package, a folder or a wheel (`open_engine`), from the same options, so they all
agree on what `--installed` or `--wheel` means. A shipped release (`--release X`) is not files
but the release facts the skill ships; verbs that accept it read `facts.shipped` instead.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import UsageError
from .source import ENV_VAR

if TYPE_CHECKING:
    from .installed import InstalledEngine
    from .source import Source
    from .trees import FileTree, WheelTree


@dataclass
class Engine:
    """The engine a user runs: its files (a git `Source` or a `FileTree`) and how it was named."""

    files: Source | FileTree
    kind: str  # git, installed, folder or wheel
    location: str
    version: str = ""

    def describe(self) -> dict[str, str]:
        from .source import Source

        revision = self.files.commit if isinstance(self.files, Source) else ""
        return {"kind": self.kind, "location": self.location, "version": self.version, "revision": revision}

    def paths(self) -> list[str]:
        """Every file path the engine holds, sorted (for extractors that look for files)."""
        from .source import Source

        if isinstance(self.files, Source):
            return sorted(self.files.tree)
        return self.files.paths()


def add_options(parser: argparse.ArgumentParser, release: bool = False) -> None:
    """The options that name an engine (mutually exclusive)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--source", help=f"your engine git repository, bare or not (default: ${ENV_VAR})")
    group.add_argument("--installed", action="store_true", help="the vllm_omni package this Python would import")
    group.add_argument("--engine-dir", type=Path, metavar="DIR", help="an unpacked package or source tree (no git)")
    group.add_argument("--wheel", type=Path, metavar="FILE", help="a vllm-omni wheel, read without extracting it")
    if release:
        group.add_argument(
            "--release", metavar="X.Y.Z", help="a released version: the facts the skill ships (no engine needed)"
        )


def source_path(arg: str | Path | None) -> Path | None:
    """`--source` wins over the environment variable; None when neither is given."""
    value = arg or os.environ.get(ENV_VAR)
    return Path(value).expanduser() if value else None


def pinned_git(arg: str | Path | None, revision: str) -> Source | None:
    """The engine's git repository (`--source`, else the environment variable) at `revision`;
    None when neither names one. A path that is not a repository, or a revision it lacks, is a
    usage error."""
    from .source import Source

    path = source_path(arg)
    return Source(path, revision) if path is not None else None


def require_source(arg: str | Path | None, verb: str) -> Path:
    """`source_path`, for a verb that cannot run without the engine (asked before anything else)."""
    path = source_path(arg)
    if path is None:
        raise UsageError(f"{verb} needs the engine: give --source PATH or set {ENV_VAR}")
    return path


def require_git(arg: str | Path | None, revision: str, verb: str) -> Source:
    """`pinned_git`, for a verb that cannot run without the engine."""
    from .source import Source

    return Source(require_source(arg, verb), revision)


def git_if_present(arg: str | Path | None, revision: str) -> Source | None:
    """`pinned_git`, or None when the repository lacks `revision` (an optional second look)."""
    try:
        return pinned_git(arg, revision)
    except UsageError:
        return None


def wheel_files(given: list[Path]) -> list[Path]:
    """The wheels named, folders expanded; a wheel named twice is a usage error."""
    found: list[Path] = []
    for item in given:
        if item.is_dir():
            wheels = sorted(item.glob("*.whl"))
            if not wheels:
                raise UsageError(f"{item}: no .whl files in this folder")
            found += wheels
        elif item.exists():
            found.append(item)  # a FIFO or device is refused when it is opened, without blocking
        else:
            raise UsageError(f"{item}: no such wheel or folder")
    seen: dict[Path, Path] = {}
    for wheel in found:
        real = wheel.resolve()
        if real in seen:
            raise UsageError(f"{wheel}: given twice (also as {seen[real]})")
        seen[real] = wheel
    return found


def release_wheels(given: list[Path]) -> dict[str, WheelTree]:
    """Release version -> its wheel, from the wheels and folders named. A wheel whose file name
    gives no version, or two wheels of one version, is a usage error."""
    from .trees import WheelTree

    trees: dict[str, WheelTree] = {}
    for path in wheel_files(given):
        tree = WheelTree(path)
        if tree.version_problem:
            raise UsageError(f"{path}: {tree.version_problem} (a release is named by its wheel file)")
        if tree.version in trees:
            raise UsageError(
                f"{path}: version {tree.version} is also {trees[tree.version].location}; give one wheel each"
            )
        trees[tree.version] = tree
    return trees


def find_installed() -> InstalledEngine | None:
    """The installed engine (a module-level name so tests can stand in for it)."""
    from .installed import find_installed as find

    return find()


def given(args: argparse.Namespace) -> bool:
    """Whether the arguments name an engine at all (the environment variable counts)."""
    return bool(args.wheel or args.engine_dir or args.installed or source_path(getattr(args, "source", None)))


def open_engine(args: argparse.Namespace, revision: str, cited: list[str] | None = None) -> Engine:
    """The engine named by --wheel, --engine-dir, --installed or --source (or $VLLM_OMNI_SOURCE).
    `cited`: paths the skill cites; a tree that ships none of them is not this engine."""
    from .source import Source
    from .trees import FileTree, FolderTree, WheelTree, folder_tree, require_cited

    engine: Engine
    if args.wheel:
        tree: FileTree = WheelTree(args.wheel)
        engine = Engine(tree, "wheel", str(args.wheel), tree.version)
    elif args.engine_dir:
        tree = folder_tree(args.engine_dir)
        engine = Engine(tree, "folder", str(args.engine_dir), tree.version)
    elif args.installed:
        found = find_installed()
        if found is None:
            raise UsageError(
                "no installed vllm_omni package found for this Python: give --engine-dir, --wheel or --source"
            )
        if found.git_dir is not None:
            engine = Engine(Source(found.git_dir, revision), "installed", str(found.location), found.version)
        else:
            tree = FolderTree(found.location.parent, found.version, frozenset({found.location.name}))
            engine = Engine(tree, "installed", str(found.location), found.version)
    else:
        path = source_path(args.source)
        if path is None:
            raise UsageError(
                f"{args.verb} needs your engine: give --installed, --engine-dir DIR, --wheel FILE or --source PATH "
                f"(or set {ENV_VAR})"
            )
        return Engine(Source(path, revision), "git", str(path))
    if isinstance(engine.files, FileTree) and cited:
        require_cited(engine.files, cited)
    return engine
