"""YAML anchors: key paths such as `stages[0].engine_args.max_num_seqs`, spans from node marks."""

from __future__ import annotations

import re
from functools import lru_cache

import yaml

from . import AnchorError, Span

# libyaml when it is there: the same nodes and marks, several times faster.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
STEP = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def steps(anchor: str) -> list[str | int]:
    out: list[str | int] = []
    for match in STEP.finditer(anchor):
        out.append(int(match.group(1)) if match.group(1) is not None else match.group(2))
    return out


@lru_cache(maxsize=128)
def compose(text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise AnchorError("invalid", f"file does not parse as YAML{where}") from None


def _end_line(lines: list[str], start: int, node: yaml.Node) -> int:
    """Last 1-based line of a node: its end mark, less trailing blank and comment lines."""
    mark = node.end_mark
    before = lines[mark.line][: mark.column] if mark.line < len(lines) else ""
    end = mark.line if not before.strip() else mark.line + 1
    end = max(start, min(end, len(lines)))
    while end > start and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return end


def _walk(text: str, anchor: str) -> tuple[yaml.Node, yaml.Node]:
    """(the node the span starts at, the value node) for a key path."""
    node = compose(text)
    start_node: yaml.Node | None = None
    walked = ""
    for step in steps(anchor):
        if isinstance(step, int):
            if not isinstance(node, yaml.SequenceNode) or step >= len(node.value):
                raise AnchorError("missing", f"no list item [{step}] under {walked or 'the document'}")
            node = node.value[step]
            start_node = node
            walked += f"[{step}]"
        else:
            if not isinstance(node, yaml.MappingNode):
                raise AnchorError("missing", f"no key {step!r} under {walked or 'the document'}")
            matches = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == step]
            if not matches:
                raise AnchorError("missing", f"no key {step!r} under {walked or 'the document'}")
            if len(matches) > 1:
                raise AnchorError("ambiguous", f"key {step!r} appears {len(matches)} times")
            start_node, node = matches[0]
            walked += ("." if walked else "") + step
    if node is None or start_node is None:
        raise AnchorError("missing", "empty key path")
    return start_node, node


def locate(text: str, anchor: str) -> Span:
    start_node, node = _walk(text, anchor)
    start = start_node.start_mark.line + 1
    return Span(start, _end_line(text.splitlines(), start, node))


def node_at(text: str, anchor: str) -> yaml.Node:
    """The value node a key path names (for value claims)."""
    return _walk(text, anchor)[1]
