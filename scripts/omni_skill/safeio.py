"""Reading what the tool does not control, and printing what it read. Standard library only.

- A file is read only when it is a regular file (no device, FIFO or socket, opened without
  blocking), up to a size bound, and — for a skill file — only inside the skill.
- Every JSON file goes through one strict reader: bounded size, UTF-8, no key twice in an
  object, no huge number, no NaN, no nesting deeper than the stack allows.
- Text from engine files, wheels or the skill's own files that reaches a terminal or a
  generated page has its control characters escaped (and, in Markdown, HTML made inert).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

MAX_JSON_BYTES = 32 * 1024 * 1024  # evidence/index.json is under 1 MB, releases.json under 2 MB
MAX_NUMBER_DIGITS = 30


MAX_RUN_READ = 1024 * 1024 * 1024  # engine bytes one run may read (every wheel and blob together)
_run_read = 0


class ReadBudget(Exception):
    """More engine bytes than a run may read."""


def charge(size: int, what: str) -> None:
    """Count `size` engine bytes against the run's budget; ReadBudget when it is spent."""
    global _run_read
    _run_read += size
    if _run_read > MAX_RUN_READ:
        raise ReadBudget(f"{what}: this run has read over {MAX_RUN_READ} bytes of engine files; stopping")


class UnsafeFile(ValueError):
    """A file that is not read: not regular, too large, or outside the folder it must be in."""


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, every symbolic link followed, is within `root`."""
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def read_regular(path: Path, limit: int, root: Path | None = None) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; UnsafeFile otherwise (FileNotFoundError
    when it does not exist). With `root`, the file must lie within it, links followed."""
    if root is not None and not inside(root, path):
        raise UnsafeFile("is a symbolic link out of the skill")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnsafeFile(f"cannot be opened ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(f"is not a regular file ({_kind(info.st_mode)})")
        if info.st_size > limit:
            raise UnsafeFile(f"{info.st_size} bytes, over the {limit} this file may have")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UnsafeFile(f"over the {limit} bytes this file may have")
    return data


def regular_problem(path: Path, root: Path | None = None) -> str:
    """Why `path` is not a regular file within `root` ("" when it is), without opening it."""
    if root is not None and not inside(root, path):
        return "is a symbolic link out of the skill"
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return "" if stat.S_ISREG(mode) else f"is not a regular file ({_kind(mode)})"


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a special file"


def parse_json(data: bytes | str) -> Any:
    """Strict JSON: ValueError for bad UTF-8, a key twice in one object, a number of more than
    MAX_NUMBER_DIGITS digits, NaN or Infinity, or nesting too deep to read."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not valid UTF-8 (byte {exc.start})") from None
    else:
        text = data

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        found = dict(items)
        if len(found) != len(items):
            seen: set[str] = set()
            twice = next(k for k, _ in items if k in seen or seen.add(k))  # type: ignore[func-returns-value]
            raise ValueError(f"key {printable(repr(twice))} appears twice in one object")
        return found

    def number(kind: type[int] | type[float]) -> Any:
        def parse(literal: str) -> int | float:
            if len(literal) > MAX_NUMBER_DIGITS:
                raise ValueError(f"a number of {len(literal)} characters, over the {MAX_NUMBER_DIGITS} allowed")
            return kind(literal)

        return parse

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        return json.loads(
            text,
            object_pairs_hook=pairs,
            parse_int=number(int),
            parse_float=number(float),
            parse_constant=constant,
        )
    except RecursionError:
        raise ValueError("nested too deeply to read") from None


def read_text(path: Path, limit: int = MAX_JSON_BYTES) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes: FileNotFoundError when absent,
    UnsafeFile or UnicodeDecodeError (both ValueErrors) otherwise."""
    return read_regular(path, limit).decode("utf-8")


def read_json(path: Path, limit: int = MAX_JSON_BYTES) -> Any:
    """A JSON file through the strict reader; FileNotFoundError when absent, ValueError otherwise."""
    try:
        data = read_regular(path, limit)
    except UnsafeFile as exc:
        raise ValueError(str(exc)) from None
    return parse_json(data)


# C0 controls except tab, newline and carriage return; DEL; C1 controls.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
TERMINAL_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # also CR: it overwrites a terminal line


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def printable(text: str) -> str:
    """`text` with every control character but tab and newline escaped as \\xNN, and any
    undecodable byte of a file name (a lone surrogate) as \\xNN too."""
    text = TERMINAL_CONTROL.sub(_escape, text)
    if SURROGATE.search(text):
        text = SURROGATE.sub(_byte, text)
    return text


SURROGATE = re.compile("[\ud800-\udfff]")


def _byte(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def markdown_inert(text: str) -> str:
    """`printable` text that cannot open an HTML comment or tag in generated Markdown."""
    return printable(text).replace("<", "&lt;")


JSON_RAW = re.compile("[\x7f-\x9f\ud800-\udfff]")


def json_inert(text: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) with DEL, C1 controls and lone
    surrogates written as \\u escapes: the same data, nothing a terminal acts on."""
    return JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def control_characters(text: str) -> list[tuple[int, str]]:
    """(line, character as \\xNN) of each line's first control character (tab, newline and
    carriage return are text)."""
    found = []
    for number, line in enumerate(text.split("\n"), start=1):
        match = CONTROL.search(line)
        if match:
            found.append((number, _escape(match)))
    return found
