"""What the verbs share: argument helpers, the skill root, the pinned state, the engine a verb reads.

Argument parsing needs only the standard library; each verb imports what it uses, so a verb
runs with only its own packages installed. tests/test_cli.py checks the copies of constants below
against their owners (report.FORMATS, install.AGENT_DIRS, searchspace.STAGE_TYPES, source.ENV_VAR).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError

if TYPE_CHECKING:
    from ..engine import Engine
    from ..index import EvidenceIndex
    from ..provenance import Provenance

FORMATS = ("text", "json", "markdown")
AGENTS = ("claude", "codex", "cursor")
STAGE_TYPES = ("llm_ar", "llm_generation", "diffusion")
ENV_VAR = "VLLM_OMNI_SOURCE"
RELEASES_PATH = "evidence/releases.json"
DRIFT_CLAIM_LINES = 24  # claims drift's text lists without --verbose (with its other lines: about 60)
VERSIONS_PAGE = "references/serving-tuning/versions.md"
SKILL_FILE = "SKILL.md"
WRITERS = ("resolve", "bump", "releases")
PAGE_READERS = ("resolve", "bump", "drift", "show", "releases", "install", "package")


def common_options(parser: argparse.ArgumentParser, source: bool = True, fmt: bool = True) -> None:
    parser.add_argument("--root", type=Path, help="skill root (default: the skill these scripts belong to)")
    if source:
        parser.add_argument("--source", help=f"engine git repository, bare or not (default: ${ENV_VAR})")
    if fmt:
        parser.add_argument("--format", choices=FORMATS, default="text", help="report format (default: text)")


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def engine_options(parser: argparse.ArgumentParser, release: bool = False) -> None:
    from ..engine import add_options

    add_options(parser, release)


def source_path(arg: str | None) -> Path | None:
    from ..engine import source_path as path

    return path(arg)


def find_root() -> Path:
    """The skill these scripts belong to (scripts/omni_skill/ sits two levels below its root),
    else the current folder."""
    here = Path(__file__).resolve().parents[3]
    return here if (here / SKILL_FILE).exists() else Path.cwd()


def skill_root(args: argparse.Namespace) -> Path:
    root: Path = args.root if args.root is not None else find_root()
    if not root.is_dir():
        raise UsageError(f"{root}: no such folder")
    if not (root / SKILL_FILE).exists() and args.verb != "check":
        raise UsageError(f"{root}: no {SKILL_FILE} here (give --root)")
    if args.verb in PAGE_READERS:
        from ..skill import unreadable_files

        unreadable = unreadable_files(root)
        if unreadable:
            raise UsageError(f"{unreadable[0].one_line()} (run `omni-skill check` for every such file)")
    if args.verb in WRITERS:
        from ..writes import JOURNAL, pending, recover

        if pending(root):
            if getattr(args, "dry_run", False):
                raise UsageError(
                    f"{root / JOURNAL}: an interrupted write is pending: run `omni-skill {args.verb}` "
                    "without --dry-run to complete it first"
                )
            done = recover(root)
            print(f"omni-skill {args.verb}: completed an interrupted write of {len(done)} files", file=sys.stderr)
    return root


def invalid(path: Path, exc: ValueError) -> str:
    """One line: the file, the field path and the reason (pydantic), or the JSON error."""
    from pydantic import ValidationError

    from ..findings import validation_message

    if isinstance(exc, ValidationError):
        found = exc.errors()
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return f"{path}: {validation_message(found[0])}{more}"
    return f"{path}: {str(exc).splitlines()[0]}"


def pinned_state(root: Path) -> tuple[EvidenceIndex, Provenance]:
    from ..index import load_index
    from ..provenance import load_provenance

    try:
        index = load_index(root)
    except ValueError as exc:
        raise UsageError(invalid(root / "evidence/index.json", exc)) from None
    try:
        provenance = load_provenance(root)
    except ValueError as exc:
        raise UsageError(invalid(root / "provenance.json", exc)) from None
    if index is None or provenance is None:
        raise UsageError(f"{root}: no evidence index or provenance yet: run `omni-skill resolve` first")
    from ..index import label_disagrees
    from ..labels import LabelError

    for number, record in enumerate(index.records):
        try:
            disagrees = label_disagrees(record)
        except LabelError as exc:
            raise UsageError(f"{root / 'evidence/index.json'}: records.{number}.label: {exc}") from None
        if disagrees:
            raise UsageError(
                f"{root / 'evidence/index.json'}: records.{number}: path, anchor or kind disagree with the label "
                f"{record.label!r}: run `omni-skill resolve`"
            )
    return index, provenance


def page_snapshot(root: Path) -> dict[str, str | None]:
    """The pages and data files as a writing verb read them, so it writes over none edited meanwhile."""
    from ..skill import data_files, markdown_files
    from ..writes import snapshot

    return snapshot(root, markdown_files(root) + data_files(root))


def cited_engine(args: argparse.Namespace, index: EvidenceIndex, revision: str) -> Engine:
    from ..engine import open_engine

    return open_engine(args, revision, [r.path for r in index.records])
