"""The skill's own YAML (frontmatter, data files, evals) is plain data: no anchors or aliases (an
alias bomb expands exponentially), bounded nesting, and no key twice in one mapping (YAML keeps
the last one silently). One linear pass over the parser's events finds all three."""

from __future__ import annotations

from typing import Any

import yaml

from .anchors.yaml_keys import LOADER

MAX_DEPTH = 32


def yaml_problems(text: str, first_line: int = 1) -> list[tuple[int, str]]:
    """(1-based line, message) of every anchor, alias, over-deep collection and duplicate key.
    A text that does not parse gives no problems here: the loader reports it."""
    problems: list[tuple[int, str]] = []
    # One frame per open collection: (is_mapping, keys seen, expecting a key next).
    frames: list[list[Any]] = []

    def consumed() -> None:
        """A complete node ended: in a mapping, a key is followed by its value and vice versa."""
        if frames and frames[-1][0]:
            frames[-1][2] = not frames[-1][2]

    try:
        for event in yaml.parse(text, Loader=LOADER):
            line = (event.start_mark.line if event.start_mark else 0) + first_line
            if isinstance(event, yaml.AliasEvent):
                problems.append((line, "YAML aliases (*name) are not allowed in the skill's files"))
                consumed()
                continue
            anchor = getattr(event, "anchor", None)
            if anchor:
                problems.append((line, f"YAML anchors (&{anchor}) are not allowed in the skill's files"))
            if isinstance(event, yaml.ScalarEvent):
                if frames and frames[-1][0] and frames[-1][2]:
                    if event.value in frames[-1][1]:
                        problems.append((line, f"key {event.value!r} appears twice in one mapping"))
                    frames[-1][1].add(event.value)
                consumed()
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if len(frames) >= MAX_DEPTH:
                    problems.append((line, f"nested deeper than {MAX_DEPTH} levels"))
                    return problems
                frames.append([isinstance(event, yaml.MappingStartEvent), set(), True])
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                frames.pop()
                consumed()
    except yaml.YAMLError as exc:
        if "nesting depth" in str(exc):  # libyaml's own limit, reached while scanning ahead
            mark = getattr(exc, "problem_mark", None)
            problems.append(((mark.line if mark else 0) + first_line, f"nested deeper than {MAX_DEPTH} levels"))
    except RecursionError:
        problems.append((first_line, f"nested deeper than {MAX_DEPTH} levels"))
    return problems


def plain_data(text: str) -> tuple[Any, list[tuple[int, str]]]:
    """The YAML's data when it is plain (see `yaml_problems`) and parses; else (None, problems)
    with their lines (0 when unknown)."""
    problems = yaml_problems(text)
    if problems:
        return None, problems
    try:
        return yaml.load(text, Loader=LOADER), []
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return None, [(mark.line + 1 if mark else 0, "not valid YAML")]


def construct(node: yaml.Node) -> Any:
    """The data of a composed document (what `yaml.load` gives for its text)."""
    return yaml.SafeLoader("").construct_document(node)
