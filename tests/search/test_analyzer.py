"""The analyzer's terms for the tokens people search for, and for text that is not English."""

from __future__ import annotations

from memory_bank.search.analyzer import MAX_TERM, terms


def test_stems_and_folds_case():
    assert terms("We DECIDED") == terms("decide") == ["decid"]


def test_exact_compounds_are_kept_with_their_parts():
    found = terms("Ship v1.2 of den-worker-proxy in Q3")
    assert {"v1.2", "den-worker-proxy", "q3"} <= set(found)
    assert {"den", "worker", "proxi"} <= set(found)


def test_email_addresses_are_one_term_and_parts():
    found = terms("Write to Bob.Smith@Example.com")
    assert "bob.smith@example.com" in found
    assert {"bob", "smith"} <= set(found)


def test_dates_and_numbers():
    found = terms("Due 2026-12-02 at 10:30, budget 4500")
    assert {"2026-12-02", "2026", "10:30", "4500"} <= set(found)


def test_stop_words_and_possessives():
    assert terms("what is it that they were") == []
    assert terms("Caroline's plan") == terms("caroline plan")


def test_question_words_are_dropped_from_queries_only():
    assert "kind" in terms("a kind neighbour")
    assert "kind" not in terms("What kind of music?", query=True)
    assert terms("What kind of music?", query=True) == ["music"]


def test_cjk_runs_become_bigrams_so_part_of_a_run_matches():
    assert terms("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    assert set(terms("東京")) <= set(terms("東京タワーに行きました"))
    assert terms("寿") == ["寿"]
    assert "sushi" in terms("我喜欢寿司 and sushi")


def test_other_scripts_fold_and_survive():
    assert terms("ÜBER Straße") == terms("über strasse")
    assert terms("Привет мир") == ["привет", "мир"]


def test_emoji_only_and_punctuation_only_give_no_terms():
    assert terms("🎉🔥👍") == []
    assert terms("... --- !!!") == []


def test_very_long_tokens_are_capped():
    found = terms("x" * 500 + " " + "a-" * 100 + "b")
    assert found and all(len(t) <= MAX_TERM for t in found)


def test_full_width_forms_match_ascii():
    assert terms("Ｑ３") == terms("q3")
