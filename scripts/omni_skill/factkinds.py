"""The kinds of release facts, how names match them, and a plain reader of the shipped file
(standard library only: argument parsing, `facts --release`, `since` and `find` use them without
loading pydantic; `check` validates the file with its model)."""

from __future__ import annotations

from typing import Any

FACTS_PATH = "evidence/facts.json"
PIN = "pin"

KINDS = {
    "flag": "a flag the omni serve entry point adds (vllm serve … --omni / vllm-omni serve)",
    "cli-flag": "a flag of another omni command line (bench, the omni CLI, engine arguments)",
    "config-field": "a field of a deploy, stage, pipeline or diffusion config class (Class.field)",
    "reserved-key": "a stage key the deploy loader keeps for itself",
    "pipeline-wide-field": "an engine field the deploy file sets once for every stage",
    "deep-merge-key": "a deploy key whose mappings an overlay merges instead of replacing",
    "env": "an environment variable the package reads (default: the literal it falls back to)",
    "pipeline": "a key of the pipeline registry",
    "diffusion-model": "an architecture of the diffusion model registry",
    "deploy-file": "a bundled deploy (or stage-config) YAML file",
    "endpoint": "an HTTP route of the OpenAI-compatible server (METHOD /path)",
    "cache-backend": "a value the diffusion cache selector accepts for cache_backend",
    "connector": "a registered stage connector name",
    "attention-backend": "a member of the diffusion attention backend enum",
    "quantization-method": "a quantization method name the omni quantization factory adds",
    "entry-kwarg": "a keyword of a public Python entry point (Class.method:keyword)",
}


def normalise(name: str) -> str:
    """What a user may type for the same thing: `--max-num-seqs`, `max_num_seqs`, `max-num-seqs`."""
    return name.strip().lstrip("-").replace("-", "_").lower()


def matches(fact_name: str, query: str) -> bool:
    """A fact answers a query when the names agree, or the query is the field/keyword part."""
    wanted = normalise(query)
    candidates = {normalise(fact_name)}
    for separator in (".", ":"):
        if separator in fact_name:
            candidates.add(normalise(fact_name.rsplit(separator, 1)[1]))
    if fact_name.startswith(("GET ", "POST ", "PUT ", "DELETE ", "PATCH ", "WEBSOCKET ")):
        candidates.add(normalise(fact_name.split(" ", 1)[1]))
    return wanted in candidates


class FactsUnreadable(ValueError):
    """The shipped facts file is missing or not as `releases` writes it."""


def read_shipped(root: Any, wanted: Any = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(head, timelines) of the shipped facts without pydantic: the head holds `revision` and
    `engines`; `wanted(line)` may skip a timeline's line before it is parsed (a cheap substring
    test), and every parsed one must have a kind, a name and eras."""
    import json

    path = root / FACTS_PATH
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise FactsUnreadable(f"{path}: missing (run `omni-skill releases` to make it)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FactsUnreadable(f"{path}: unreadable ({exc})") from None
    try:
        head = json.loads(lines[0][: lines[0].index(', "facts": [')] + "}")
        if not isinstance(head.get("engines"), list) or not isinstance(head.get("revision"), str):
            raise ValueError("no engines or revision")
        timelines = []
        for line in lines[1:]:
            if line in ("]}", "") or (wanted is not None and not wanted(line)):
                continue
            item = json.loads(line.rstrip(","))
            if not (isinstance(item, dict) and {"kind", "name", "eras"} <= set(item)):
                raise ValueError(f"a timeline without kind, name or eras: {line[:60]}")
            timelines.append(item)
    except (IndexError, ValueError, AttributeError) as exc:
        raise FactsUnreadable(f"{path}: not a valid facts file ({str(exc).splitlines()[0][:120]})") from None
    return head, timelines


def at_engine(timelines: list[dict[str, Any]], engine: str) -> list[dict[str, Any]]:
    """Each fact as one engine has it: kind, name, default, where, attrs."""
    found = []
    for item in timelines:
        for era in item["eras"]:
            if engine in era["engines"]:
                line = era["lines"][era["engines"].index(engine)]
                found.append(
                    {
                        "kind": item["kind"],
                        "name": item["name"],
                        "default": era.get("default"),
                        "where": f"{era['path']}:{line}",
                        "attrs": era.get("attrs") or {},
                    }
                )
    return found
