"""``core.config.load_settings``: defaults, then the environment, then overrides."""

from __future__ import annotations

import pytest

from newsquarry.search.core.config import load_settings


def test_a_change_to_the_environment_is_seen_by_the_next_read(monkeypatch):
    monkeypatch.delenv("NEWSQUARRY_MAX_QUERY_LENGTH", raising=False)
    assert load_settings()["max_query_length"] == 400
    monkeypatch.setenv("NEWSQUARRY_MAX_QUERY_LENGTH", "50")
    assert load_settings()["max_query_length"] == 50
    monkeypatch.setenv("NEWSQUARRY_MAX_QUERY_LENGTH", "60")
    assert load_settings()["max_query_length"] == 60
    monkeypatch.delenv("NEWSQUARRY_MAX_QUERY_LENGTH")
    assert load_settings()["max_query_length"] == 400


def test_each_read_is_a_dict_of_its_own(monkeypatch):
    first = load_settings()
    first["max_query_length"] = -1
    assert load_settings()["max_query_length"] != -1
    assert load_settings(max_query_length=7)["max_query_length"] == 7
    assert load_settings()["max_query_length"] != 7


def test_a_bad_value_in_the_environment_says_so_every_time(monkeypatch):
    monkeypatch.setenv("NEWSQUARRY_MAX_QUERY_LENGTH", "many")
    for _ in range(2):
        with pytest.raises(ValueError):
            load_settings()
