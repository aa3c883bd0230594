"""Claims: the sentences, table rows, list items and data entries that carry citations, and their verdicts."""

from __future__ import annotations

from omni_skill.pageclaims import (
    by_page,
    citation_verdict,
    claim_verdict,
    data_claims,
    markdown_claims,
    sentence_starts,
)

A, B, C = "src:pkg/a.py::A", "src:pkg/b.py::B", "src:pkg/c.py::C"
PAGE = f"""# Page

## Table

| knob | read by |
|---|---|
| x | [`A`][{A}] |
| y | [`B`][{B}] and [`C`][{C}] |

## Prose

The first fact is [here][{A}], e.g. in the loop. The second fact is [there][{B}].
It goes on [again][{C}].

- an item citing [`A`][{A}]
  over two lines [`B`][{B}]
  - a nested item [`C`][{C}]
"""


def uses_of(text: str) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        for label in (A, B, C):
            if f"][{label}]" in line:
                found.setdefault(number, set()).add(label)
    return found


def claims():
    return markdown_claims("references/x/page.md", PAGE, uses_of(PAGE))


def test_each_table_row_is_one_claim():
    rows = [c for c in claims() if c.kind == "row"]
    assert [(c.line, c.labels) for c in rows] == [(7, (A,)), (8, (B, C))]
    assert rows[1].text == "y · `B` and `C`"


def test_a_paragraph_is_split_into_sentences_and_each_citation_goes_to_its_own():
    sentences = [c for c in claims() if c.kind == "sentence"]
    assert [c.labels for c in sentences] == [(A,), (B,), (C,)]
    assert sentences[0].text == "The first fact is here, e.g. in the loop."
    assert sentences[2].line == 13 and sentences[2].heading == "Prose"


def test_a_list_item_holds_the_citations_of_all_its_lines_but_not_its_nested_items():
    items = [c for c in claims() if c.kind == "item"]
    assert [(c.line, c.labels) for c in items] == [(15, (A, B)), (17, (C,))]


def test_claim_ids_do_not_change_when_the_words_do():
    edited = PAGE.replace("The first fact is", "The very first fact is")
    before = {c.id for c in claims()}
    after = {c.id for c in markdown_claims("references/x/page.md", edited, uses_of(edited))}
    assert before == after and len(before) == 7


def test_abbreviations_and_code_do_not_end_a_sentence():
    assert sentence_starts("Use `a. B` here, i.e. Not split. Next one.") == [0, 33]


def test_a_data_entry_is_the_list_item_that_holds_its_citations():
    text = f"settings:\n  - name: alpha\n    source: {A}\n    read_by:\n      - {B}\n  - name: beta\n    source: {C}\n"
    found = data_claims("references/x/space.yaml", text, {3: {A}, 5: {B}, 7: {C}})
    assert [(c.heading, c.text, c.labels) for c in found] == [
        ("settings", "name: alpha", (A, B)),
        ("settings", "name: beta", (C,)),
    ]


def test_a_claim_is_as_good_as_its_worst_citation_and_unchecked_ones_do_not_count():
    assert claim_verdict(["holds", "changed-cosmetic", "not-shipped"]) == "changed-cosmetic"
    assert claim_verdict(["changed", "missing"]) == "missing"
    assert claim_verdict(["not-shipped"]) == "not-shipped"
    assert citation_verdict("changed", cosmetic=True) == "changed-cosmetic"
    assert citation_verdict("relocated", similarity=1.0) == "holds"


def test_drift_lists_the_worst_claims_of_every_page_within_its_budget():
    items = [
        {"file": f, "line": n, "verdict": v}
        for f, n, v in [("a.md", 1, "changed"), ("a.md", 2, "missing"), ("a.md", 3, "changed"), ("b.md", 1, "changed")]
    ]
    pages, hidden = by_page(items, 2)
    assert [(p["file"], [i["line"] for i in p["claims"]], p["more"]) for p in pages] == [
        ("a.md", [2], 2),
        ("b.md", [1], 0),
    ]
    assert hidden == 2
    assert by_page(items, None)[1] == 0
