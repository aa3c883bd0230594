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


def plain_document(text: str, first_line: int = 1) -> tuple[yaml.Node | None, list[tuple[int, str]]]:
    """The composed document when the YAML is plain (see `yaml_problems`), else (None, problems).
    A text without `&` or `*` holds no anchor or alias, so the composed tree alone shows nesting
    and repeated keys and the event pass is skipped. yaml.YAMLError when it does not parse."""
    if "&" in text or "*" in text:
        problems = yaml_problems(text, first_line)
        return (None, problems) if problems else (yaml.compose(text, Loader=LOADER), [])
    try:
        node = yaml.compose(text, Loader=LOADER)
    except yaml.YAMLError as exc:
        if "nesting depth" not in str(exc):  # libyaml's own limit
            raise
        mark = getattr(exc, "problem_mark", None)
        return None, [((mark.line if mark else 0) + first_line, f"nested deeper than {MAX_DEPTH} levels")]
    problems = _tree_problems(node, first_line)
    return (None, problems) if problems else (node, [])


def _tree_problems(node: yaml.Node | None, first_line: int) -> list[tuple[int, str]]:
    """Nesting over MAX_DEPTH (the first, in document order) and keys repeated in one mapping."""
    problems: list[tuple[int, str]] = []
    pending: list[tuple[yaml.Node, int]] = [(node, 1)] if node is not None else []
    while pending:  # depth first, in document order
        current, depth = pending.pop()
        if not isinstance(current, (yaml.MappingNode, yaml.SequenceNode)):
            continue
        if depth > MAX_DEPTH:
            problems.append((current.start_mark.line + first_line, f"nested deeper than {MAX_DEPTH} levels"))
            break
        children: list[yaml.Node] = []
        if isinstance(current, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in current.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        problems.append(
                            (key.start_mark.line + first_line, f"key {key.value!r} appears twice in one mapping")
                        )
                    seen.add(key.value)
                children += [key, value]
        else:
            children = list(current.value)
        pending += [(child, depth + 1) for child in reversed(children)]
    return sorted(problems)


def plain_data(text: str) -> tuple[Any, list[tuple[int, str]]]:
    """The YAML's data when it is plain (see `yaml_problems`) and parses; else (None, problems)
    with their lines (0 when unknown)."""
    try:
        node, problems = plain_document(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return None, [(mark.line + 1 if mark else 0, "not valid YAML")]
    return (None, problems) if problems else (construct(node) if node is not None else None, [])


def construct(node: yaml.Node) -> Any:
    """The data of a composed document or of one node in it (what `yaml.load` gives for its text)."""
    return yaml.SafeLoader("").construct_document(node)


def mapping(node: yaml.Node | None) -> dict[str, yaml.Node]:
    """A mapping node's values by scalar key ({} for any other node)."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
