"""Python anchors: dotted qualified names found with `ast`.

Classes, functions, async functions, methods, nested classes, class fields (annotated or
assigned) and module constants. Definitions under `if`/`try`/`with` blocks at module or class
level count (e.g. `if TYPE_CHECKING:`); a name defined more than once is ambiguous unless the
anchor picks one with a 1-based `#n` suffix in source order.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache

from . import AnchorError, Span

Definitions = dict[str, list[tuple[Span, ast.AST]]]


def _names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.Assign):
        names: list[str] = []
        for target in node.targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            names += [e.id for e in elements if isinstance(e, ast.Name)]
        return names
    return []


def _span(node: ast.stmt) -> Span:
    start = node.lineno
    decorators = getattr(node, "decorator_list", [])
    if decorators:
        start = min(start, *(d.lineno for d in decorators))
    return Span(start, node.end_lineno or node.lineno)


def _walk(body: list[ast.stmt], prefix: str, found: Definitions) -> None:
    for node in body:
        for name in _names(node):
            found.setdefault(prefix + name, []).append((_span(node), node))
        if isinstance(node, ast.ClassDef):
            _walk(node.body, f"{prefix}{node.name}.", found)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.AsyncWith)):
            blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])]
            blocks += [handler.body for handler in getattr(node, "handlers", [])]
            for block in blocks:
                _walk(block, prefix, found)


def members(node: ast.ClassDef) -> Definitions:
    """The names a class body defines, as `definitions` reads them (if/try/with blocks included)."""
    found: Definitions = {}
    _walk(node.body, "", found)
    return found


@lru_cache(maxsize=256)
def definitions(text: str) -> Definitions:
    """Every qualified name defined in the module, in source order."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise AnchorError("invalid", f"file does not parse as Python (line {exc.lineno})") from None
    except (RecursionError, MemoryError):
        raise AnchorError("invalid", "file is nested too deeply for Python's parser") from None
    found: Definitions = {}
    _walk(tree.body, "", found)
    return found


def split_occurrence(anchor: str) -> tuple[str, int | None]:
    name, sep, nth = anchor.partition("#")
    return name, int(nth) if sep else None


def find(text: str, anchor: str) -> tuple[Span, ast.AST]:
    name, nth = split_occurrence(anchor)
    candidates = definitions(text).get(name)
    if not candidates:
        raise AnchorError("missing", f"no definition of {name!r}")
    if nth is None:
        if len(candidates) > 1:
            lines = ", ".join(str(span.start) for span, _ in candidates)
            raise AnchorError(
                "ambiguous", f"{name!r} is defined {len(candidates)} times (lines {lines}); add #1..#{len(candidates)}"
            )
        return candidates[0]
    if nth > len(candidates):
        raise AnchorError("missing", f"{name!r} is defined {len(candidates)} time(s), not {nth}")
    return candidates[nth - 1]


def locate(text: str, anchor: str) -> Span:
    return find(text, anchor)[0]


def sub_span(whole: Span, symbol: str, first: int, last: int) -> Span:
    """The absolute lines of lines `first`..`last` (1 = the definition's first line) of the
    definition `symbol` found at `whole`; AnchorError when they run past its end."""
    length = whole.end - whole.start + 1
    if last > length:
        shown = f"L{first}" if first == last else f"L{first}-L{last}"
        raise AnchorError(
            "missing",
            f"sub-span @{shown} runs past the end of {symbol!r}, which has {length} line(s) "
            f"(L{whole.start}-L{whole.end} of the file)",
        )
    return Span(whole.start + first - 1, whole.start + last - 1)


TRANSPARENT = re.compile(r"^(if|elif|else|try|except|finally|with|async\s+with)\b")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _deeper(line: str, level: int) -> bool:
    """`_indent(line) >= level` for level > 0, without copying the line (or a blank line)."""
    return line[:level].isspace()


LONG_BLOCK = 30


@lru_cache(maxsize=64)
def _parse(text: str) -> ast.Module | None:
    """A block's parse, kept so that proving a definition and reading its node parse it once.
    Callers must not change the tree."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _block_text(block: list[str], margin: int, first: int) -> str:
    """The block moved to the left margin, after blank lines that put its first line at `first`."""
    return "\n" * (first - 1) + "\n".join(line[margin:] for line in block)


def _parses_as(block: list[str], margin: int, leaf: str, first: int = 1) -> bool:
    """The lines parse as exactly one statement, spanning all of them, that defines `leaf`
    (`first`: the line number the block's first line has in its file)."""
    if any(line.strip() and _indent(line) < margin for line in block):
        return False
    module = _parse(_block_text(block, margin, first))
    if module is None or len(module.body) != 1:
        return False
    return _span(module.body[0]) == Span(first, first + len(block) - 1) and leaf in _names(module.body[0])


def _word_follows(text: str, word: str) -> bool:
    """`text` starts with `word` and the next character cannot continue an identifier."""
    return text.startswith(word) and not (
        len(text) > len(word) and (text[len(word)].isalnum() or text[len(word)] == "_")
    )


def _defines_block(line: str, leaf: str) -> bool:
    """The line opens `def leaf`, `async def leaf` or `class leaf` (any indentation)."""
    text = line.lstrip()
    if text.startswith("async"):
        rest = text[5:]
        if not rest[:1].isspace():
            return False
        text = rest.lstrip()
    for keyword in ("def", "class"):
        if text.startswith(keyword) and text[len(keyword) : len(keyword) + 1].isspace():
            return _word_follows(text[len(keyword) :].lstrip(), leaf)
    return False


def _assigns(line: str, leaf: str) -> bool:
    """The line starts an assignment or annotation of `leaf` (`leaf =`, `leaf: T`), not `leaf ==`."""
    text = line.lstrip()
    if not _word_follows(text, leaf):
        return False
    rest = text[len(leaf) :].lstrip()
    return rest.startswith(":") or (rest.startswith("=") and not rest.startswith("=="))


def _header_end(lines: list[str], span: Span, leaf: str, margin: int) -> int | None:
    """0-based last line of the head (decorators and signature) of the `def`/`class` block at
    `span` that defines `leaf`, proven by parsing the head with a `pass` body; None if not."""
    head = span.start - 1
    if lines[head].strip().startswith("@"):  # decorators, possibly over several lines
        head = next((i for i in range(head, min(head + 30, span.end)) if _defines_block(lines[i], leaf)), span.end)
    if head >= span.end or not _defines_block(lines[head], leaf) or _indent(lines[head]) != margin:
        return None
    # The signature ends at the first line after which the brackets are balanced and a colon closes
    # it; try that line first, then each line in turn.
    depth, guess = 0, None
    for index in range(head, min(head + 40, span.end - 1)):
        code = lines[index].split("#", 1)[0].rstrip()
        depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
        if depth == 0 and code.endswith(":"):
            guess = index
            break
    order = ([guess] if guess is not None else []) + list(range(head, min(head + 40, span.end - 1)))
    for stop in order:
        if _parses_as(_head_stub(lines, span, stop, margin), margin, leaf):
            return stop
    return None


def _head_stub(lines: list[str], span: Span, stop: int, margin: int) -> list[str]:
    return lines[span.start - 1 : stop + 1] + [" " * (margin + 4) + "pass"]


def head_node(lines: list[str], span: Span, leaf: str) -> ast.stmt | None:
    """The `def`/`class` at `span` with its decorators and signature but none of its body, parsed
    from those lines alone (file line numbers); None when they cannot be proven to define `leaf`."""
    margin = _indent(lines[span.start - 1])
    stop = _header_end(lines, span, leaf, margin)
    if stop is None:
        return None
    module = _parse(_block_text(_head_stub(lines, span, stop, margin), margin, span.start))
    return module.body[0] if module is not None and len(module.body) == 1 else None


def _block_is_definition(lines: list[str], span: Span, leaf: str, margin: int) -> bool:
    """For a long `def`/`class` block: its head (decorators and signature) parses as the definition
    of `leaf`, every body line is indented past the margin, and the block ends exactly where the
    next statement at its margin or above starts. Anything unusual answers False (parse instead)."""
    stop = _header_end(lines, span, leaf, margin)
    if stop is None:
        return False
    if not lines[span.end - 1].strip():
        return False
    body_code = False
    strings = string_lines(lines)
    for number in range(stop + 1, span.end):
        line = lines[number]
        deeper = line[: margin + 1].isspace()  # indented past the margin, or blank (`_deeper`, inlined)
        if (deeper and body_code) or not line.strip() or line.lstrip().startswith("#") or number in strings:
            continue
        if not deeper:
            return False  # a statement at or above the margin inside the span
        body_code = True
    if not body_code:
        return False
    for later in range(span.end, len(lines)):
        text = lines[later]
        if later in strings:
            return False  # the span ends inside a string
        if text.strip() and not text.lstrip().startswith("#"):
            return _indent(text) <= margin
    return True


# Where multi-line strings are: a scan may only propose a definition's span; what it proposes must
# not start inside a string, nor end where a string runs on past it. Python's `tokenize` would tell,
# but it costs twice a full parse; this lexer looks only at lines holding a triple quote or ending
# in a backslash (other lines cannot open or close a multi-line string), so it costs a few
# substring tests per line.
TRIPLES = ('"""', "'''")
OUTSIDE = re.compile(r"#|\"\"\"|'''|\"|'")
CLOSES = {quote: re.compile(r"(?:\\.|[^\\])*?" + re.escape(quote), re.DOTALL) for quote in TRIPLES} | {
    quote: re.compile(r"(?:\\.|[^\\" + quote + r"])*" + quote) for quote in ('"', "'")
}


def _lex_line(line: str, state: str | None) -> str | None:
    """The string still open at the end of `line` (its quote), given the one open at its start."""
    position = 0
    if state is not None:
        closed = CLOSES[state].match(line)
        if closed is None:
            return state if state in TRIPLES or _continued(line) else None
        position = closed.end()
    while True:
        found = OUTSIDE.search(line, position)
        if found is None or found.group() == "#":
            return None
        quote = found.group()
        closed = CLOSES[quote].match(line, found.end())
        if closed is None:
            # an unclosed one-quote string is an error unless a backslash continues it
            return quote if quote in TRIPLES or _continued(line) else None
        position = closed.end()


def _continued(line: str) -> bool:
    """The line ends with an odd number of backslashes (it continues on the next line)."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


_STRING_LINES: dict[int, tuple[list[str], frozenset[int]]] = {}


def string_lines(lines: list[str]) -> frozenset[int]:
    """0-based indexes of the lines that begin inside a string (a triple-quoted string, or a
    one-quote string continued by a backslash): no statement starts or ends on them. Remembered for
    the last few line lists (by identity)."""
    cached = _STRING_LINES.get(id(lines))
    if cached is not None and cached[0] is lines:
        return cached[1]
    inside: set[int] = set()
    state: str | None = None
    for index, line in enumerate(lines):
        if state is None:
            if '"""' not in line and "'''" not in line and not line.endswith("\\"):
                continue
        else:
            inside.add(index)
            if state in TRIPLES and state not in line:
                continue
        state = _lex_line(line, state)
    found = frozenset(inside)
    if len(_STRING_LINES) >= 64:
        _STRING_LINES.pop(next(iter(_STRING_LINES)))
    _STRING_LINES[id(lines)] = (lines, found)
    return found


def verify_at(lines: list[str], anchor: str, span: Span) -> bool:
    """True when the lines of `span` are the definition `anchor` names, judged from the span and the
    lines above it without parsing the whole module. False means "not proven": resolve in full.

    The proof: the span starts outside any string (`string_lines`), in the classes the anchor names;
    it does not end where a string runs on; and its lines parse as exactly that one definition
    (a long `def`/`class`: its head parses and its body is indented under it)."""
    name, nth = split_occurrence(anchor)
    if nth is not None or span.end > len(lines) or span.start < 1:
        return False
    inside = string_lines(lines)
    if span.start - 1 in inside or span.end in inside:
        return False
    block = lines[span.start - 1 : span.end]
    margin = _indent(block[0])
    parts = name.split(".")
    if not _in_scopes(lines, span.start, margin, parts[:-1]):
        return False
    long_definition = len(block) > LONG_BLOCK and block[0].lstrip().startswith(("@", "def ", "async ", "class "))
    if long_definition:
        return _block_is_definition(lines, span, parts[-1], margin)
    return _parses_as(block, margin, parts[-1], span.start)


def _in_scopes(lines: list[str], start: int, margin: int, scopes: list[str]) -> bool:
    """The line `start` (1-based, at indentation `margin`) sits directly in the classes `scopes`
    (outermost first), with only if/try/with blocks between, judged from the lines above it."""
    scopes = list(scopes)
    level = margin
    for index in range(start - 2, -1, -1):
        if level == 0:
            break
        line = lines[index]
        if line[:level].isspace():  # deeper (`_deeper`, inlined: this loop runs over whole classes)
            continue
        stripped = line.strip()
        if not stripped or stripped[0] in "#@)]}":
            continue  # blank, comment, decorator, or the close of a multi-line header
        level = _indent(line)
        if TRANSPARENT.match(stripped):
            continue
        match = re.match(r"^class\s+([A-Za-z_]\w*)\b", stripped)
        if not match or not scopes or match.group(1) != scopes[-1]:
            return False
        scopes.pop()
    return not scopes and level == 0


def _decorators_start(lines: list[str], index: int, indent: int) -> int:
    """0-based first line of the decorators above the definition at `index` (itself if none);
    a decorator may run over several lines."""
    start = index
    k = index - 1
    while k >= 0:
        stripped = lines[k].strip()
        if not stripped:
            break
        if _indent(lines[k]) == indent and stripped.startswith("@"):
            start = k
        elif not (_indent(lines[k]) > indent or (_indent(lines[k]) == indent and stripped[0] in ")]}")):
            break
        k -= 1
    return start


def quick_find(lines: list[str], anchor: str) -> tuple[Span, ast.stmt] | None:
    """Find a definition by scanning for its name and proving each candidate with `verify_at`,
    without parsing the module. None when not exactly one candidate is proven. The node's line
    numbers are the file's."""
    span = quick_span(lines, anchor)
    if span is None:
        return None
    block = lines[span.start - 1 : span.end]
    module = _parse(_block_text(block, _indent(block[0]), span.start))  # parsed already when the block is short
    return (span, module.body[0]) if module is not None else None


NAMED = re.compile(r"\s*(?:(?:async\s+)?(?:def|class)\s+(\w+)|(\w+)\s*[:=])")
_NAMED_LINES: dict[int, tuple[list[str], dict[str, list[int]]]] = {}


def _named_lines(lines: list[str]) -> dict[str, list[int]]:
    """Name -> 0-based lines that may define it (`def`/`class` NAME, or NAME followed by `:` or
    `=`): every line `_defines_block` or `_assigns` accepts, found in one pass per file instead of
    one per anchor. Remembered for the last few line lists (by identity)."""
    cached = _NAMED_LINES.get(id(lines))
    if cached is not None and cached[0] is lines:
        return cached[1]
    found: dict[str, list[int]] = {}
    for index, line in enumerate(lines):
        match = NAMED.match(line)
        if match:
            found.setdefault(match.group(1) or match.group(2), []).append(index)
    if len(_NAMED_LINES) >= 64:
        _NAMED_LINES.pop(next(iter(_NAMED_LINES)))
    _NAMED_LINES[id(lines)] = (lines, found)
    return found


def quick_span(lines: list[str], anchor: str) -> Span | None:
    """The span `quick_find` proves, without building the definition's node."""
    name, nth = split_occurrence(anchor)
    if nth is not None:
        return None
    bare = name.rsplit(".", 1)[-1]
    found: list[Span] = []
    strings: frozenset[int] | None = None
    for index in _named_lines(lines).get(bare, ()):
        line = lines[index]
        if not (_defines_block(line, bare) or _assigns(line, bare)):
            continue
        if strings is None:
            strings = string_lines(lines)
        if index in strings:
            continue  # a definition quoted in a string, not one of the module
        indent = _indent(line)
        start = _decorators_start(lines, index, indent) + 1
        end = index + 1
        for later in range(index + 1, len(lines)):
            text = lines[later]
            if _deeper(text, indent + 1) or later in strings:
                end = later + 1
                continue
            if text.strip() and not text.lstrip().startswith("#"):
                if not text.strip().startswith((")", "]", "}")):
                    break
            end = later + 1
        while end > index + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1
        if verify_at(lines, anchor, Span(start, end)):
            found.append(Span(start, end))
    return found[0] if len(found) == 1 else None
