"""A line range whose text was edited is found again by its lines' hashes, without the pinned text."""

from __future__ import annotations

from omni_skill.anchors import Span
from omni_skill.anchors.lines import align, line_hash, line_hashes

PINNED = ["def f(x):", "    a = 1", "    b = 2", "    c = 3", "    return a + b + c", "", "def g():", "    pass"]


def hashes(lines: list[str], start: int, end: int) -> list[str]:
    return line_hashes(lines, Span(start, end)).split()


def test_line_hashes_ignore_indentation_and_are_short():
    assert line_hash("    a = 1  ") == line_hash("a = 1")
    assert all(len(h) == 8 for h in hashes(PINNED, 1, 5))


def test_an_edited_line_inside_a_moved_range_is_found_with_its_span():
    now = ["# header", "# more", *PINNED[:2], "    b = 20", *PINNED[3:]]
    assert align(hashes(PINNED, 1, 5), now) == (Span(3, 7), 0.8)


def test_an_edited_last_line_stays_inside_the_new_span():
    now = [*PINNED[:4], "    return a * b * c", *PINNED[5:]]
    assert align(hashes(PINNED, 1, 5), now) == (Span(1, 5), 0.8)


def test_a_range_whose_lines_are_mostly_gone_is_not_found():
    now = ["def f(x):", "    return 0", "", "def g():", "    pass"]
    assert align(hashes(PINNED, 1, 5), now) is None


def test_a_surviving_run_found_twice_has_no_single_place():
    twice = ["x = 1", "y = 2", "z = 3"]
    now = ["x = 1", "y = 2", "w = 0", "", "x = 1", "y = 2", "v = 0"]
    assert align(hashes(twice, 1, 3), now) is None


def test_blank_lines_alone_never_mark_a_place():
    assert align([line_hash(""), line_hash("gone")], ["", "other"]) is None
