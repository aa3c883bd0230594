"""The `facts` and `since` verbs: their arguments, and what they print."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .errors import UsageError

KINDS_HELP = "flag, cli-flag, config-field, env, pipeline, diffusion-model, deploy-file, endpoint, … (see --help)"
REPOSITORY = "https://github.com/vllm-project/vllm-omni"


def add_arguments(verbs: Any) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    from .engine import add_options
    from .factkinds import KINDS

    kinds = "; ".join(f"{k}: {v}" for k, v in KINDS.items())
    facts = verbs.add_parser(
        "facts",
        help="what an engine states as data (flags, config fields, env vars, registries, endpoints) with locations",
        description="List the facts of one engine: a release the skill ships facts for (--release X, no engine "
        "needed), or an engine read live (--installed, --wheel, --engine-dir, --source). Default: the pinned "
        f"revision's shipped facts. Kinds: {kinds}.",
    )
    facts.add_argument("--root", type=Path, help="skill root (default: the skill these scripts belong to)")
    facts.add_argument("name", nargs="?", help="only facts of this name (`--x`, `x_y`, `Class.field`; after `--`)")
    facts.add_argument("--kind", action="append", metavar="KIND", help="only these kinds (repeatable)")
    add_options(facts, release=True)
    facts.add_argument("--revision", help="with --source: the revision to read (default: the pinned one)")
    facts.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")

    since = verbs.add_parser(
        "since",
        help="one fact across every release and the pin: where it exists, each default, when it came and went",
        description="The timeline of a fact (a flag, config field, env var, registry key, endpoint, …) across every "
        "release the skill ships facts for and the pinned revision. Names that begin with `--` go after `--`: "
        "since -- --some-flag.",
    )
    since.add_argument("--root", type=Path, help="skill root (default: the skill these scripts belong to)")
    since.add_argument("name", help="the fact's name")
    since.add_argument("--kind", action="append", metavar="KIND", help="only these kinds (repeatable)")
    since.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    return facts, since


def _kinds(args: argparse.Namespace) -> set[str] | None:
    from .factkinds import KINDS

    if not args.kind:
        return None
    unknown = sorted(set(args.kind) - set(KINDS))
    if unknown:
        raise UsageError(f"unknown kind {unknown[0]!r}: one of {', '.join(KINDS)}")
    return set(args.kind)


def _shipped(root: Path, wanted: Any = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from .factkinds import FactsUnreadable, read_shipped

    try:
        return read_shipped(root, wanted)
    except FactsUnreadable as exc:
        raise UsageError(str(exc)) from None


def _prefilter(args: argparse.Namespace, kinds: set[str] | None) -> Any:
    """A cheap test on a timeline's JSON line before it is parsed."""
    needles = [f'"kind": "{k}"' for k in kinds] if kinds else []
    folded = args.name.strip().lstrip("-").replace("-", "").replace("_", "").lower() if args.name else ""

    def wanted(line: str) -> bool:
        if needles and not any(n in line for n in needles):
            return False
        return not folded or folded in line.lower().replace("-", "").replace("_", "")

    return wanted


def blob_url(engine_id: str, revision: str, where: str) -> str:
    """The permalink of a fact's line: at the release tag for a release, at the commit for the pin."""
    path, _, line = where.rpartition(":")
    ref = revision if engine_id in ("pin", "") else f"v{engine_id}"
    return f"{REPOSITORY}/blob/{ref}/{path}#L{line}"


def _row(fact: dict[str, Any], engine_id: str, revision: str) -> dict[str, Any]:
    url = blob_url(engine_id, revision, fact["where"]) if (engine_id == "pin" or revision or engine_id) else ""
    return {
        "kind": fact["kind"],
        "name": fact["name"],
        "default": fact["default"],
        "where": fact["where"],
        "url": url,
        **fact["attrs"],
    }


def cmd_facts(args: argparse.Namespace, root: Path) -> int:
    from .factkinds import PIN, at_engine, matches
    from .report import render

    kinds = _kinds(args)
    live = bool(args.wheel or args.engine_dir or args.installed or args.source)
    if live:
        from .engine import open_engine
        from .facts import extract
        from .provenance import load_provenance

        provenance = load_provenance(root)
        if provenance is None and not args.revision:
            raise UsageError(f"{root}: no provenance.json: give --revision")
        engine = open_engine(args, args.revision or (provenance.revision if provenance else ""))
        found = [
            {"kind": f.kind, "name": f.name, "default": f.default, "where": f.where, "attrs": f.attrs}
            for f in extract(engine.files, engine.paths(), kinds)
        ]
        described = engine.describe()
        engine_id = engine.version if engine.kind in ("wheel",) and engine.version else ""
        revision = described.get("revision", "")
    else:
        head, timelines = _shipped(root, _prefilter(args, kinds))
        order = [str(e.get("id")) for e in head["engines"]]
        engine_id = args.release or PIN
        if engine_id not in order:
            known = ", ".join(order)
            raise UsageError(f"no shipped facts for release {engine_id!r}: known are {known} (or give a wheel)")
        found = at_engine(timelines, engine_id)
        revision = head["revision"] if engine_id == PIN else ""
        described = {
            "kind": "shipped facts",
            "location": "evidence/facts.json",
            "version": "" if engine_id == PIN else engine_id,
            "revision": revision,
        }
    if args.name:
        found = [f for f in found if matches(f["name"], args.name)]
    rows = [_row(f, engine_id, revision) for f in found]
    data = {"verb": "facts", "engine": described, "name": args.name or "", "facts": rows}
    sys.stdout.write(render("facts", data, args.format))
    return 0 if rows or not args.name else 1


def cmd_since(args: argparse.Namespace, root: Path) -> int:
    from .factkinds import matches
    from .report import render

    kinds = _kinds(args)
    head, shipped = _shipped(root, _prefilter(args, kinds))
    order = [str(e.get("id")) for e in head["engines"]]
    found = [t for t in shipped if matches(t["name"], args.name) and (not kinds or t["kind"] in kinds)]
    timelines = []
    for item in found:
        present = [e for era in item["eras"] for e in era["engines"]]
        eras = [
            {
                "engines": era["engines"],
                "first": era["engines"][0],
                "last": era["engines"][-1],
                "default": era.get("default"),
                "attrs": era.get("attrs") or {},
                "where": f"{era['path']}:{era['lines'][-1]}",
                "url": blob_url(era["engines"][-1], head["revision"], f"{era['path']}:{era['lines'][-1]}"),
            }
            for era in item["eras"]
        ]
        timelines.append(
            {
                "kind": item["kind"],
                "name": item["name"],
                "first_seen": present[0],
                "absent_in": [e for e in order if e not in present],
                "removed_after": _removed_after(order, present),
                "eras": eras,
            }
        )
    data = {"verb": "since", "name": args.name, "engines": order, "timelines": timelines}
    sys.stdout.write(render("since", data, args.format))
    if not timelines:
        print(f"omni-skill since: no fact named {args.name!r} in any release or the pin", file=sys.stderr)
    return 0 if timelines else 1


def _removed_after(order: list[str], present: list[str]) -> str:
    """The last engine that has it when a later one lacks it (removed), else ''."""
    last = max(order.index(e) for e in present)
    return order[last] if last < len(order) - 1 else ""
