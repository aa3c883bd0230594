"""The quick Python locator proposes a span by scanning; only a proof accepts it. A line at the
left margin inside a string never ends a definition, and a definition quoted in a string is not one."""

from __future__ import annotations

from omni_skill.anchors import Span, locate, python
from omni_skill.labels import parse_label

# A class longer than the long-block threshold whose method holds a string with lines at column 0.
PROMPT_CLASS = (
    "import os\n\n\nclass Pipeline:\n"
    + "".join(f"    def step{i}(self):\n        return {i}\n\n" for i in range(12))
    + '    def prompt(self):\n        text = (\n            """first\nat the margin, inside the string\n'
    + 'def fake():\n    pass\n"""\n        )\n        return text\n\n'
    + "".join(f"    def tail{i}(self):\n        return {i}\n\n" for i in range(5))
    + "\nAFTER = 1\n"
)
QUOTED = '"""Usage:\n\nclass Ghost:\n    x = 1\n"""\n\nREAL = 2\n'


def test_a_long_class_is_not_cut_at_a_margin_line_inside_a_string():
    lines = PROMPT_CLASS.splitlines()
    full = python.locate(PROMPT_CLASS, "Pipeline")
    assert full.end - full.start > python.LONG_BLOCK
    assert python.quick_span(lines, "Pipeline") == full


def test_a_span_cut_inside_a_string_is_not_proven():
    lines = PROMPT_CLASS.splitlines()
    cut = next(i for i, line in enumerate(lines) if line.startswith("at the margin"))
    short = Span(python.locate(PROMPT_CLASS, "Pipeline").start, cut)  # ends on the line before the margin line
    assert not python.verify_at(lines, "Pipeline", short)


def test_the_quick_path_of_locate_agrees_with_the_parse():
    label = parse_label("src:pkg/pipeline.py::Pipeline")
    assert locate(label, PROMPT_CLASS, quick=True) == locate(label, PROMPT_CLASS)


def test_a_definition_quoted_in_a_docstring_is_not_found_by_scanning():
    assert python.quick_span(QUOTED.splitlines(), "Ghost") is None
    assert python.quick_span(QUOTED.splitlines(), "REAL") == Span(7, 7)


def test_string_lines_follow_triple_quotes_comments_and_continued_strings():
    lines = [
        "x = 1  # a comment with ''' in it",
        'y = \'"""\'',
        's = """one',
        "two",
        '"""',
        "z = 'a\\",
        "b'",
        "w = 2",
    ]
    assert python.string_lines(lines) == frozenset({3, 4, 6})
