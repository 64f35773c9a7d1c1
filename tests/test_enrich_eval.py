"""The scoring rules of benchmarks.eval_quotes, on hand-made gold (no corpus needed)."""

from __future__ import annotations

from benchmarks.eval_quotes import Gold, Item, evaluate, is_named, matches, speaker_ok
from newsquarry.search.ingest.enrich.quotes import ArticleQuote


def gold(start: int, end: int, speaker: str = "Trump", kind: str = "direct", **kw) -> Gold:
    values = dict(
        start=start,
        end=end,
        kind=kind,
        speaker=speaker,
        speaker_start=None,
        speaker_end=None,
        is_pronoun=False,
        suspect=False,
        text="x" * (end - start),
    )
    values.update(kw)
    return Gold(**values)


def pred(start: int, end: int, speaker: str | None = "Donald Trump", kind: str = "direct"):
    return ArticleQuote(start, end, "x" * (end - start), kind, speaker, speaker, None, None, "say")


def test_match_needs_half_of_the_gold_span():
    g = gold(10, 30)
    assert matches(pred(10, 30), g)
    assert matches(pred(20, 60), g)  # 10 of 20 gold characters
    assert not matches(pred(21, 60), g)  # 9 of 20


def test_speaker_rules():
    assert speaker_ok("Trump", "Donald Trump")
    assert speaker_ok("Sen. Lindsey Graham, R-S.C", "Lindsey Graham")
    assert speaker_ok("Donald Trump", "Donald Trump")
    assert speaker_ok("The Washington Post", "Washington Post")
    assert not speaker_ok("Trump", "Hillary Clinton")
    assert not speaker_ok("Trump", None)
    assert is_named(gold(0, 1, speaker="Donald Trump"))
    assert is_named(gold(0, 1, speaker="the Washington Post"))
    assert not is_named(gold(0, 1, speaker="the senator"))
    assert not is_named(gold(0, 1, speaker="He", is_pronoun=True))


def test_evaluate_excludes_indirect_and_suspect_records():
    item = Item(
        "a",
        "t" * 200,
        [gold(0, 20), gold(50, 60, kind="partial"), gold(100, 120, suspect=True)],
    )
    preds = [
        pred(0, 20),  # right, right speaker
        pred(50, 60, speaker="Hillary Clinton", kind="partial"),  # right span, wrong speaker
        pred(100, 120),  # matches only a suspect record: ignored
        pred(150, 170),  # a false positive
        pred(170, 190, kind="indirect"),  # not scored
    ]
    res = evaluate([item], [preds])
    assert res["gold_quotes"] == 2
    assert res["all_recall"] == 1.0
    assert res["all_precision"] == round(2 / 3, 4)
    assert res["direct_precision"] == 0.5  # our direct ones: (0,20) right, (150,170) wrong
    assert res["speaker_accuracy_named_end_to_end"] == 0.5
