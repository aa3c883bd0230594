"""The engine a verb reads: git at a revision, the installed package, a folder, a wheel.

Every verb that reads a user's engine (drift, show, facts, since, lint-deploy) gets it here, from
the same options, so they all agree on what `--installed` or `--wheel` means. A shipped release
(`--release X`) is not files but the release facts the skill ships; verbs that accept it read
`facts.shipped` instead.
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
    from .trees import FileTree


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


def source_path(arg: str | None) -> Path | None:
    """`--source` wins over the environment variable; None when neither is given."""
    value = arg or os.environ.get(ENV_VAR)
    return Path(value).expanduser() if value else None


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
