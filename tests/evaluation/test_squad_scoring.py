"""SQuAD scoring on hand-made cases; expected values worked out from the official
evaluate-v1.1.py and evaluate-v2.0.py definitions (quoted where they matter)."""

import pytest

from official_bert.evaluation.squad_scoring import (
    exact_match,
    f1,
    normalize_answer,
    squad_v1_scores,
    squad_v2_scores,
    tune_no_answer_threshold,
)


def _data(questions):
    """questions: [(id, [gold texts])]; an empty list is an unanswerable question."""
    qas = [
        {
            "id": qid,
            "question": "?",
            "answers": [{"text": text, "answer_start": 0} for text in answers],
            "is_impossible": not answers,
        }
        for qid, answers in questions
    ]
    return [{"paragraphs": [{"context": "c", "qas": qas}]}]


def test_normalization_drops_case_punctuation_articles_and_spaces():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("An apple, a pear and THE end.") == "apple pear and end"
    # Articles only as whole words; punctuation goes first, so "the." is an article.
    assert normalize_answer("theatre then the.") == "theatre then"
    assert exact_match("the Denver Broncos", "Denver Broncos!") == 1.0


def test_f1_counts_shared_tokens_with_multiplicity():
    # prediction "x b b c" vs gold "b b d": common {b: 2}; precision 2/4, recall 2/3.
    assert f1("x b b c", "b b d") == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert f1("the cat", "a dog") == 0.0
    assert f1("", "the") == 1.0  # v2.0: both normalise to nothing
    assert f1("", "the", empty_matches_empty=False) == 0.0  # v1.1: num_same == 0
    assert f1("", "cat") == 0.0


def test_v1_takes_the_best_gold_answer_and_counts_missing_as_wrong():
    data = _data(
        [
            ("q1", ["Denver Broncos", "The Denver Broncos", "Broncos"]),
            ("q2", ["Santa Clara, California", "Levi's Stadium"]),
            ("q3", ["gold"]),
        ]
    )
    scores = squad_v1_scores(data, {"q1": "the broncos", "q2": "Santa Clara"})
    # q1: EM 1 against "Broncos". q2: F1 max(2*1*(2/3)/(1+2/3) = 0.8, 0) with "santa clara
    # california"; EM 0. q3: missing -> 0.
    assert scores["exact_match"] == pytest.approx(100 / 3)
    assert scores["f1"] == pytest.approx(100 * (1 + 0.8) / 3)
    assert scores["total"] == 3 and scores["missing"] == 1


def test_v2_has_and_no_answer_breakdown_and_empty_predictions():
    data = _data([("a1", ["Paris"]), ("a2", ["the red house"]), ("n1", []), ("n2", [])])
    predictions = {"a1": "Paris", "a2": "", "n1": "", "n2": "London"}
    scores = squad_v2_scores(data, predictions)
    assert scores["HasAns_exact"] == 50.0 and scores["HasAns_total"] == 2
    assert scores["NoAns_exact"] == 50.0 and scores["NoAns_total"] == 2
    assert scores["exact"] == 50.0 and scores["f1"] == 50.0 and scores["total"] == 4
    assert "best_f1" not in scores  # no odds, no threshold search
    # Gold answers that normalise to nothing are dropped ("the" -> ""), making it unanswerable.
    assert squad_v2_scores(_data([("q", ["The"])]), {"q": ""})["NoAns_exact"] == 100.0


def test_v2_threshold_search_and_applying_a_threshold():
    data = _data([("a1", ["Paris"]), ("a2", ["red house"]), ("n1", []), ("n2", [])])
    predictions = {"a1": "Paris", "a2": "blue house", "n1": "Rome", "n2": ""}
    odds = {"a1": -3.0, "a2": 1.0, "n1": 2.0, "n2": 5.0}
    scores = squad_v2_scores(data, predictions, odds, no_answer_threshold=10.0)
    # Threshold 10 keeps every prediction: a1 right, a2 F1 0.5, n1 wrong, n2 right.
    assert scores["exact"] == 50.0 and scores["f1"] == pytest.approx(100 * 2.5 / 4)
    # find_best_thresh: start with all abstaining (2 no-answers right), then answer by rising
    # odds: a1 +1 -> 3 (best, thresh -3), a2 +0 (EM) / +0.5 (F1), n1 -1, n2 +0 (empty).
    assert scores["best_exact"] == 75.0 and scores["best_exact_thresh"] == -3.0
    assert scores["best_f1"] == pytest.approx(100 * 3.5 / 4) and scores["best_f1_thresh"] == 1.0
    # Applying the threshold 1.0: n1 (odds 2) and n2 become "" (right), a2 is kept.
    at_one = squad_v2_scores(data, predictions, odds, no_answer_threshold=1.0)
    assert at_one["f1"] == pytest.approx(scores["best_f1"])
    assert at_one["NoAns_exact"] == 100.0


def test_tuning_searches_the_best_non_null_answers_and_can_abstain_everywhere():
    data = _data([("a1", ["Paris"]), ("n1", []), ("n2", [])])
    # a1's answer is right but was hidden as "" at threshold 0 (odds 0.5 > 0): tuning must see
    # "Paris", not "", to find that a threshold of 0.5 answers it.
    best_non_null = {"a1": "Paris", "n1": "Rome", "n2": "Oslo"}
    odds = {"a1": 0.5, "n1": 2.0, "n2": 3.0}
    tuned = tune_no_answer_threshold(data, best_non_null, odds)
    assert tuned["null_score_diff_threshold"] == 0.5
    assert tuned["exact"] == 100.0
    # Every answer wrong: abstaining everywhere is best, a threshold below all odds (BERT's odds
    # are score differences of any sign; the official 0.0 would answer a1 and n1).
    wrong = {"a1": "Rome", "n1": "Rome", "n2": "Oslo"}
    odds = {"a1": -2.0, "n1": -1.0, "n2": 3.0}
    tuned = tune_no_answer_threshold(data, wrong, odds)
    assert tuned["null_score_diff_threshold"] < -2.0
    assert tuned["exact"] == pytest.approx(200 / 3)
    assert squad_v2_scores(data, wrong, odds)["best_exact_thresh"] == 0.0  # the official value


def test_tuning_does_not_split_questions_of_equal_odds():
    # One answerable question right and two unanswerable ones answered, all at odds -0.1: no
    # threshold answers a1 alone. The official search scores "a1 answered, n1 and n2 not"
    # (100%), which no threshold gives; tuning must pick abstaining everywhere (2 of 3).
    data = _data([("a1", ["Paris"]), ("n1", []), ("n2", [])])
    answers = {"a1": "Paris", "n1": "Rome", "n2": "Oslo"}
    odds = {"a1": -0.1, "n1": -0.1, "n2": -0.1}
    assert squad_v2_scores(data, answers, odds)["best_f1"] == 100.0  # evaluate-v2.0.py's figure
    tuned = tune_no_answer_threshold(data, answers, odds)
    assert tuned["null_score_diff_threshold"] < -0.1
    assert tuned["f1"] == pytest.approx(200 / 3)
    # What the tuned threshold gives, scored as written, is what tuning reported.
    at_tuned = squad_v2_scores(data, answers, odds, tuned["null_score_diff_threshold"])
    assert at_tuned["f1"] == pytest.approx(tuned["f1"])


def test_v1_counts_every_question_of_a_repeated_id_as_the_official_script():
    # evaluate-v1.1.py loops over the file's questions: an id given twice counts twice, each
    # question against its own answers, with the id's one prediction.
    data = _data([("dup", ["Paris"]), ("dup", ["London"]), ("u", ["Rome"])])
    scores = squad_v1_scores(data, {"dup": "Paris", "u": "Rome"})
    assert scores["total"] == 3
    assert scores["exact_match"] == pytest.approx(200 / 3)
