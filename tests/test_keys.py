import base64
import json

import pytest

from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.query.keys import KeyRefused, Scope, apply_scope, make_key, verify_key

SECRET = "a-long-enough-server-secret"


def test_round_trip_and_filters_enforced():
    key = make_key(SECRET, Scope({"speaker": ["Harry Solano"]}, expires=2_000_000_000))
    scope = verify_key(SECRET, key, now=1_000_000_000)
    # no speaker asked: the key's speaker is applied
    req = apply_scope(SearchRequest(q="torture"), scope)
    assert req.filters == {"speaker": ["Harry Solano"]} and req.q == "torture"
    # narrowing within the scope (accents/case folded) is fine
    req = apply_scope(SearchRequest(filters={"speaker": ["harry solano"]}), scope)
    assert req.filters == {"speaker": ["harry solano"]}
    # other facets can be added: they only narrow
    req = apply_scope(SearchRequest(filters={"person": ["Nicolás Maduro"]}), scope)
    assert req.filters == {"person": ["Nicolás Maduro"], "speaker": ["Harry Solano"]}
    # widening is refused with a clear error
    with pytest.raises(KeyRefused, match="only allows speaker = Harry Solano"):
        apply_scope(SearchRequest(filters={"speaker": ["Harry Solano", "Donald Trump"]}), scope)


def test_date_scope_cannot_be_widened():
    scope = Scope(date_from="2019-02", date_to="2019")
    req = apply_scope(SearchRequest(date_from="2010", date_to="2030-01-01"), scope)
    assert (req.date_from, req.date_to) == ("2019-02-01", "2019-12-31")
    req = apply_scope(SearchRequest(date_from="2019-05-02"), scope)
    assert (req.date_from, req.date_to) == ("2019-05-02", "2019-12-31")


def test_expired_key_refused():
    key = make_key(SECRET, Scope({"source": ["Wire"]}, expires=1000))
    with pytest.raises(KeyRefused, match="expired"):
        verify_key(SECRET, key, now=1000)
    assert verify_key(SECRET, key, now=999).filters == {"source": ["Wire"]}


def test_tampered_key_refused():
    key = make_key(SECRET, Scope({"source": ["Wire"]}))
    payload, sig = key[4:].split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=="))
    body["f"] = {}
    forged = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
    with pytest.raises(KeyRefused, match="signature"):
        verify_key(SECRET, f"nqk_{forged}.{sig}")
    with pytest.raises(KeyRefused, match="signature"):
        verify_key("another-server-secret-123", key)
    for bad in ("", "nqk_", "abc.def", "nqk_a.b.c"):
        with pytest.raises(KeyRefused):
            verify_key(SECRET, bad)


def test_short_secret_and_bad_facet_refused():
    with pytest.raises(KeyRefused, match="at least 16"):
        make_key("short", Scope())
    with pytest.raises(KeyRefused, match="cannot filter"):
        make_key(SECRET, Scope({"nope": ["x"]}))


def test_cli_key_command(tmp_path):
    from click.testing import CliRunner

    from newsquarry.search.cli.app import cli

    r = CliRunner().invoke(
        cli, ["key", "--speaker", "Harry Solano", "--expires-in", "1h"],
        env={"NEWSQUARRY_SECRET": SECRET},
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    scope = verify_key(SECRET, r.stdout.strip())
    assert scope.filters == {"speaker": ["Harry Solano"]} and scope.expires
    r = CliRunner().invoke(cli, ["key", "--expires-in", "soon"], env={"NEWSQUARRY_SECRET": SECRET})
    assert r.exit_code == 2 and "--expires-in" in r.output


def test_malformed_keys_and_dates_are_refused_not_crashed():
    from newsquarry.search.core.errors import InvalidRequest

    for bad in ("nqk_é.x", "nqk_abc.é", "nqk_abc.", "nqk_" + "a" * 5000 + ".b", "nqk_a b.c"):
        with pytest.raises(KeyRefused, match="malformed"):
            verify_key(SECRET, bad)
    with pytest.raises(KeyRefused, match="not a valid date"):
        make_key(SECRET, Scope(date_from="2019-13"))
    with pytest.raises(KeyRefused, match="not a valid date"):
        make_key(SECRET, Scope(date_to="2019-02-30"))
    scope = verify_key(SECRET, make_key(SECRET, Scope({"speaker": ["A"]}, date_to="2019")))
    for name in ("date_from", "date_to"):
        with pytest.raises(InvalidRequest, match="not a valid date") as exc:
            apply_scope(SearchRequest(**{name: "1987-13"}), scope)
        assert exc.value.field == name


def test_article_ids_in_a_scope_are_exact():
    scope = Scope({"article": ["News/A"]})
    with pytest.raises(KeyRefused):
        apply_scope(SearchRequest(filters={"article": ["news/a"]}), scope)
    assert apply_scope(SearchRequest(filters={"article": ["News/A"]}), scope).filters == {
        "article": ["News/A"]
    }
