"""A fingerprint of what a span's code does, blind to what only documents it.

Two spans whose text differs but whose code fingerprints agree differ only in docstrings, comments
or layout: a claim resting on them still holds in substance (`changed-cosmetic`).

- Python definitions and whole modules: the AST (no positions) after removing every string
  statement (docstrings, and strings used as comments), after a quick hash of their names and
  keywords outside strings and comments. Equal ASTs have equal names, so where the quick hashes
  differ the code differs and nothing is parsed (`same_code`);
- lines of Python (a line range, a sub-span): the tokens without comments, line breaks and
  indentation (a fragment need not parse);
- YAML keys and whole files: the data (JSON, keys sorted);
- anything else, or code that cannot be read this way: no fingerprint ("").
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import re
import tokenize

from ..labels import Label
from . import Span

CHARS = 16


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:CHARS]


def code_fingerprint(label: Label, text: str, lines: list[str], span: Span) -> str:
    """The code fingerprint of a label's span in a file's text ("" when it has none)."""
    kind, path = label.kind, label.path
    block = lines[span.start - 1 : span.end]
    if kind == "python":
        ast_digest = _python_ast(block)
        return _python_words(block) + ast_digest if ast_digest else ""
    if kind in ("subspan", "lines") and path.endswith(".py"):
        return _python_tokens(block)
    if kind == "yaml":
        from .yaml_keys import node_at

        try:
            from ..yamlcheck import construct

            return _data(construct(node_at(text, label.anchor)))
        except Exception:  # noqa: BLE001 - a node that cannot be constructed has no fingerprint
            return ""
    if kind == "file" and path.endswith(".py"):
        return _python_ast(lines)
    if kind == "file" and path.endswith((".yaml", ".yml")):
        import yaml

        from .yaml_keys import LOADER

        try:
            return _data(yaml.load(text, Loader=LOADER))  # noqa: S506 - a safe loader (libyaml's when present)
        except (yaml.YAMLError, RecursionError):
            return ""
    return ""


def same_code(label: Label, pinned: str, text: str, lines: list[str], span: Span) -> bool:
    """Whether the span's code fingerprint is `pinned` (the pinned span's), parsing only when the
    quick hash of a Python definition's names agrees."""
    if not pinned:
        return False
    if label.kind == "python" and _python_words(lines[span.start - 1 : span.end]) != pinned[:CHARS]:
        return False
    return code_fingerprint(label, text, lines, span) == pinned


STRINGS_AND_COMMENTS = re.compile(
    r"""[rRbBuUfF]{0,2}(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|#[^\n]*""",
    re.DOTALL,
)
WORD = re.compile(r"\w+")


def _python_words(block: list[str]) -> str:
    """A hash of the names and keywords outside strings and comments, numbers and `pass` left out
    and `elif` read as `else if`: what any two Python texts with equal ASTs (as `_python_ast`
    reads them) have in common."""
    words = WORD.findall(STRINGS_AND_COMMENTS.sub(" ", "\n".join(block)))
    kept = ["else if" if w == "elif" else w for w in words if not w[0].isdigit() and w != "pass"]
    return _digest(" ".join(kept))


def _dedented(block: list[str]) -> str | None:
    """The block moved to the left margin of its first line; None when a line sits further left."""
    if not block:
        return None
    margin = len(block[0]) - len(block[0].lstrip())
    if any(line.strip() and len(line) - len(line.lstrip()) < margin for line in block):
        return None
    return "\n".join(line[margin:] for line in block) + "\n"


class _WithoutStrings(ast.NodeTransformer):
    """Drops string statements from every body (an empty body keeps a `pass`)."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and all(isinstance(s, ast.stmt) for s in body):
                kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
                if not kept and field == "body":
                    kept = [ast.Pass()]
                setattr(node, field, kept)
        return node


def _python_ast(block: list[str]) -> str:
    source = _dedented(block)
    if source is None:
        return ""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    return _digest(ast.dump(_WithoutStrings().visit(tree), include_attributes=False))


SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def _python_tokens(block: list[str]) -> str:
    source = _dedented(block)
    if source is None:
        return ""
    found: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type not in SKIPPED:
                found.append(token.string)
    except tokenize.TokenError:
        pass  # a fragment that ends inside brackets or a string: its tokens so far
    except (IndentationError, SyntaxError):
        return ""
    return _digest("\x00".join(found))


def _data(value: object) -> str:
    try:
        return _digest(json.dumps(value, sort_keys=True, default=repr, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        return ""
