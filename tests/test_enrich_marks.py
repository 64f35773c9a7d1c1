"""Quote-mark pairing and the repair of missing marks (search/enrich/marks.py).

Every text here was written for these tests. Each case is a convention of real news
in English that used to turn a paragraph inside out: quotations whose paragraphs the
page ran together (`"A. "B. "C."`), a closing mark left out, stray marks, ``''``,
guillemets and low-high marks.
"""

from __future__ import annotations

from newsquarry.search.core.models import Article, Quote
from newsquarry.search.ingest.enrich.marks import find_quote_spans
from newsquarry.search.ingest.passages import paragraphs, split_passages


def spans_of(text: str) -> list[str]:
    return [text[s.start : s.end] for s in find_quote_spans(text, paragraphs(text))]


def quotes_of(text: str) -> list[Quote]:
    from newsquarry.search.ingest.enrich import enrich_article

    article = Article(id="t", title="t", text=text)
    passages = enrich_article(article, split_passages(article, min_chars=1))
    return [q for p in passages for q in p.quotes if q.kind != "indirect"]


def test_pieces_run_together_each_open_with_a_mark():
    text = (
        'Ann Lee added: "We have a young squad. "They will learn from this. '
        '"The next game is the one that matters." The club play again on Sunday.'
    )
    assert spans_of(text) == [
        "We have a young squad.",
        "They will learn from this.",
        "The next game is the one that matters.",
    ]


def test_a_missing_closing_mark_does_not_flip_the_rest_of_the_paragraph():
    text = (
        'Tom Reyes said: "We are not worried. "The board has done its job," he said. '
        'The club was sold in May. Reyes later added: "It is a fair price."'
    )
    got = spans_of(text)
    assert "The club was sold in May" not in " ".join(got)
    assert got == [
        "We are not worried.",
        "The board has done its job,",
        "It is a fair price.",
    ]


def test_a_stray_closing_mark_is_dropped():
    text = 'The vote was close," and then Ann Lee said: "We won, and we won fairly."'
    assert spans_of(text) == ["We won, and we won fairly."]


def test_two_apostrophes_as_a_double_mark():
    text = "''We will fight on,'' said Ann Lee. Her rival's team did not comment."
    assert spans_of(text) == ["We will fight on,"]


def test_guillemets_and_low_high_marks():
    assert spans_of("Ann Lee said: «We will fight on.» The vote is on Monday.") == [
        "We will fight on."
    ]
    assert spans_of("Ann Lee said: „We will fight on.“ The vote is on Monday.") == [
        "We will fight on."
    ]


def test_a_piece_run_into_reported_speech_ends_before_it():
    text = (
        'Ann Lee said: "We are ready for the final and I believe we can win it. '
        "Meanwhile, the club chairman Tom Reyes welcomed the news and said the squad "
        'was fit. "It will be hard," Reyes added.'
    )
    texts = [q.text for q in quotes_of(text)]
    assert texts[0] == "We are ready for the final and I believe we can win it."
    assert not any("chairman" in t for t in texts)


def test_a_quote_left_open_at_the_paragraph_end_stops_where_narrative_resumes():
    text = (
        'Ann Lee confirmed on Sunday: "I am giving all my prize money to the appeal. '
        "Her gift follows pledges by three other players at the tournament.\n\n"
        "The tournament ends on Sunday."
    )
    texts = [q.text for q in quotes_of(text)]
    assert texts == ["I am giving all my prize money to the appeal."]


def test_a_trailing_attribution_inside_an_unclosed_piece_ends_it():
    text = (
        'Ann Lee said: "The plan is sound. "It was tested for two years and it works, '
        'she said. "Nobody has shown otherwise."'
    )
    texts = [q.text for q in quotes_of(text)]
    assert "It was tested for two years and it works," in texts
    assert not any("she said" in t for t in texts)


def test_multi_paragraph_quotation_still_continues():
    text = (
        'Ann Lee said: "We will not be intimidated.\n\n'
        '"Our volunteers will keep knocking on doors.\n\n'
        "The statement did not mention the police."
    )
    assert spans_of(text) == [
        "We will not be intimidated.",
        "Our volunteers will keep knocking on doors.",
    ]


def test_a_closing_mark_typed_after_a_space_following_a_comma_still_closes():
    text = 'The mood was grim. "We have lost everything we built, "Ann Lee said. "Nothing is left."'
    assert spans_of(text) == ["We have lost everything we built,", "Nothing is left."]


def test_a_mark_after_a_comma_still_opens_when_no_attribution_follows():
    text = (
        'Ann Lee said the plan was "a good start, but only a start. Without money, she added, '
        '"this is how it will end."'
    )
    assert "this is how it will end." in spans_of(text)
