"""The skeleton the model-catalogue checks parse: function definitions blanked, all else kept."""

from __future__ import annotations

import ast

from omni_skill.engine_modules import skeleton

MODULE = """\
from .base import Base, OTHER
import os

LIMIT = 4


@decorate(
    option=1,
)
def helper(
    a,
    b,
) -> int:
    total = a + b
    return total


class Pipeline(Base, metaclass=Meta):
    supports_request_batch = True
    support_audio_output: bool = False

    @property
    def name(self):
        return "x"

    async def run(self):
        pass

    if os.environ.get("X"):
        extra = 1

    class Inner:
        value = 2


@dataclass
class Config:
    size: int = 8
"""


def summary(tree: ast.Module) -> list[str]:
    return [
        ast.dump(node)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.ImportFrom, ast.Import))
    ] + [
        f"{node.name}:{[ast.dump(b) for b in node.bases]}" for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
    ]


def test_functions_are_blanked_and_line_numbers_kept():
    short = skeleton(MODULE)
    assert "def " not in short and "return" not in short
    assert len(short.split("\n")) == len(MODULE.split("\n"))
    tree = ast.parse(short)
    config = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Config")
    assert (
        config.lineno
        == next(n for n in ast.parse(MODULE).body if isinstance(n, ast.ClassDef) and n.name == "Config").lineno
    )


def test_what_the_catalogue_reads_is_unchanged():
    full = ast.parse(MODULE)
    short = ast.parse(skeleton(MODULE))
    wanted = [s for s in summary(full) if "total" not in s]  # the local inside helper() goes with it
    assert summary(short) == wanted


def test_a_module_of_only_functions_still_parses():
    assert ast.parse(skeleton("def a():\n    return 1\n\n\nasync def b():\n    return 2\n"))


def test_a_def_inside_a_string_at_the_margin_may_not_parse_and_the_caller_falls_back():
    text = 'DOC = """\ndef fake():\n    x\n"""\nVALUE = 1\n'
    short = skeleton(text)
    try:
        tree = ast.parse(short)
    except SyntaxError:
        return  # Engine.module parses the whole text then
    assert any(isinstance(n, ast.Assign) and n.targets[0].id == "VALUE" for n in tree.body)


def test_exact_blanking_at_the_edges():
    cases = {
        "": "",
        "x = 1": "x = 1",
        "def f(): pass": "pass",  # a def on the last line, no newline after it
        "@d\ndef f():\n  pass": "pass\n\n",
        "@d\nclass A:\n  pass\n": "@d\nclass A:\n  pass\n",  # a decorated class is kept
        "@x\n": "@x\n",  # a decorator with nothing after it is kept
        "@x\n@y": "@x\n@y",
        # a closing bracket at the margin continues the signature; the comment ends nothing
        "@d(\n  1,\n)\nasync def f(\n a,\n):\n  pass\n# c\nZ = 1": "pass\n\n\n\n\n\n\n\nZ = 1",
        "def g():\r\n  pass\r\nK=1\r\n": "pass\n\nK=1\r\n",  # CRLF: only "\n" splits lines
        "class A:\n    @property\n    def x(self):\n        return 1\n    y = 2\n": "class A:\n    pass\n\n\n    y = 2\n",
        "def f():\n\tx\n\f\nq = 1\n": "pass\n\n\nq = 1\n",  # tab-indented body, a form-feed line
    }
    for text, expected in cases.items():
        assert skeleton(text) == expected, text
