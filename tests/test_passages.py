from newsquarry.search.core.models import Article
from newsquarry.search.ingest.passages import passage_spans, split_passages


def test_offsets_round_trip_for_every_passage(seed_doc):
    passages = split_passages(seed_doc)
    assert len(passages) >= 10
    for p in passages:
        assert seed_doc.text[p.start : p.end] == p.text
        assert p.text == p.text.strip() and p.text


def test_ids_are_stable_and_ordered(seed_doc):
    first = [(p.id, p.start, p.end) for p in split_passages(seed_doc)]
    again = [(p.id, p.start, p.end) for p in split_passages(seed_doc)]
    assert first == again
    assert [i for i, _, _ in first][:3] == [
        f"{seed_doc.id}#p1",
        f"{seed_doc.id}#p2",
        f"{seed_doc.id}#p3",
    ]


def test_seed_passages_follow_paragraphs(seed_doc):
    paragraphs = [p for p in seed_doc.text.split("\n\n") if p.strip()]
    texts = [p.text for p in split_passages(seed_doc)]
    # every passage is one or more whole paragraphs
    joined = "\n\n".join(texts)
    assert joined == "\n\n".join(paragraphs)
    assert any(t.startswith('"Normal soldiers') for t in texts)


def test_short_paragraphs_join_their_neighbour():
    text = "Short one.\n\nAnother short.\n\n" + "A long paragraph here. " * 10
    spans = passage_spans(text, min_chars=40, max_chars=1000)
    assert len(spans) == 1
    assert text[spans[0][0] : spans[0][1]].startswith("Short one.\n\nAnother short.")


def test_long_paragraph_splits_at_sentences_never_inside_a_quote():
    quote = '"This is a quoted sentence. And another one inside the same quote. And a third."'
    sentences = [f"Sentence number {i} is here." for i in range(30)]
    para = " ".join(sentences[:15]) + " " + quote + " " + " ".join(sentences[15:])
    art = Article(id="a", title="t", text=para)
    passages = split_passages(art, min_chars=50, max_chars=300)
    assert len(passages) > 2
    for p in passages:
        assert art.text[p.start : p.end] == p.text
        assert p.text.count('"') % 2 == 0, p.text  # no quotation cut in two
        assert p.text.endswith((".", '"')), p.text  # no sentence cut in two
    assert any(quote in p.text for p in passages)


def test_abbreviations_do_not_end_sentences():
    para = ("Mr. Smith met Dr. Jones in the U.S. capital. " * 20).strip()
    art = Article(id="a", title="t", text=para)
    for p in split_passages(art, min_chars=50, max_chars=200):
        assert not p.text.endswith(("Mr.", "Dr.")) and not p.text.startswith(("Smith", "Jones"))


def test_single_newline_layouts_split_into_paragraphs():
    from newsquarry.search.ingest.passages import paragraphs

    text = (
        "Council cuts libraries; \nA vote of seven to two.\n"
        "The council met on Monday.\n"
        '"We had no choice," said the leader.\n'
        "Advertisement - Story continues below\n"
        "Voters were angry."
    )
    got = [text[s:e] for s, e in paragraphs(text)]
    assert got == [
        "Council cuts libraries;",
        "A vote of seven to two.",
        "The council met on Monday.",
        '"We had no choice," said the leader.',
        "Advertisement - Story continues below",
        "Voters were angry.",
    ]


def test_wrapped_lines_are_not_split():
    from newsquarry.search.ingest.passages import paragraphs

    text = (
        "Supporters said they would keep knocking on doors and getting people to take part\n"
        "in caucuses and primaries across the state, as they had done since the spring of\n"
        "last year. He met Mr.\nSmith later."
    )
    assert [text[s:e] for s, e in paragraphs(text)] == [text]


def test_blank_line_paragraphs_unchanged():
    from newsquarry.search.ingest.passages import paragraphs

    text = "First paragraph.\n\n  Second one.\n\n\nThird."
    assert [text[s:e] for s, e in paragraphs(text)] == ["First paragraph.", "Second one.", "Third."]
