"""A serve command line as a user types it: `VAR=value … vllm serve MODEL --omni --flag value …`
or `vllm-omni serve …`, backslash continuations included. Parsing only; what the flags mean is
the lint's business (`lint_deploy`)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import UsageError

PROGRAMS = ("vllm", "vllm-omni")
SHELL_OPERATORS = frozenset({"|", "||", "&&", ";", "&", ">", ">>", "<", "2>&1", "1>&2"})
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class CommandFlag:
    flag: str  # as typed, without `=value`
    value: str | None  # None for a switch
    position: int  # index among the tokens after `serve`


@dataclass
class ServeCommand:
    program: str
    env: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    flags: list[CommandFlag] = field(default_factory=list)
    extra_positionals: list[str] = field(default_factory=list)

    def last(self, *names: str) -> CommandFlag | None:
        found = [f for f in self.flags if f.flag in names]
        return found[-1] if found else None

    def has(self, name: str) -> bool:
        return any(f.flag == name for f in self.flags)


def tokens(command: str) -> list[str]:
    """The shell words of a command (continuations joined), up to the first shell operator."""
    joined = re.sub(r"\\\r?\n", " ", command)
    try:
        words = shlex.split(joined, comments=True)
    except ValueError as exc:
        raise UsageError(f"--serve: the command does not parse as a shell line ({exc})") from None
    for index, word in enumerate(words):
        if word in SHELL_OPERATORS:
            return words[:index]
    return words


def parse(command: str, takes_value: Callable[[str], bool | None]) -> ServeCommand:
    """Parse a serve command. `takes_value(flag)`: True/False for a flag the engine defines, None
    for one it does not (then a following word that is not a flag is taken as its value)."""
    words = tokens(command)
    env: dict[str, str] = {}
    index = 0
    while index < len(words) and (ASSIGNMENT.match(words[index]) or words[index] == "env"):
        if words[index] != "env":
            name, _, value = words[index].partition("=")
            env[name] = value
        index += 1
    if index >= len(words):
        raise UsageError("--serve: no command after the variable assignments")
    program = words[index].rsplit("/", 1)[-1]
    if program not in PROGRAMS or index + 1 >= len(words) or words[index + 1] != "serve":
        raise UsageError(f"--serve: expected `vllm serve …` or `vllm-omni serve …`, got {' '.join(words[:3])!r}")
    command_line = ServeCommand(program=program, env=env)
    rest = words[index + 2 :]
    position = 0
    while position < len(rest):
        word = rest[position]
        if word == "--":
            command_line.extra_positionals += rest[position + 1 :]
            break
        if word.startswith("-") and len(word) > 1 and not _number(word):
            name, equals, inline = word.partition("=")
            if equals:
                command_line.flags.append(CommandFlag(name, inline, position))
                position += 1
                continue
            wants = takes_value(name)
            following = rest[position + 1] if position + 1 < len(rest) else None
            follows_value = following is not None and (not following.startswith("-") or _number(following))
            if wants or (wants is None and follows_value):
                command_line.flags.append(CommandFlag(name, following, position))
                position += 2 if following is not None else 1
                continue
            command_line.flags.append(CommandFlag(name, None, position))
            position += 1
            continue
        if command_line.model is None:
            command_line.model = word
        else:
            command_line.extra_positionals.append(word)
        position += 1
    model_flag = command_line.last("--model")
    if command_line.model is None and model_flag is not None:
        command_line.model = model_flag.value
    return command_line


def _number(word: str) -> bool:
    return bool(re.fullmatch(r"-\d+(\.\d+)?", word))
