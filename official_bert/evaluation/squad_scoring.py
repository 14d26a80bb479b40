"""SQuAD exact match and F1 with the semantics of the official evaluation scripts.

v1.1 (evaluate-v1.1.py): answers normalised (lower case, punctuation, the articles a/an/the and
extra whitespace dropped); EM and F1 of a question are the max over its gold answers; results in
percent over all questions.

v2.0 (evaluate-v2.0.py): the same normalisation; gold answers that normalise to "" are dropped
and a question without any is unanswerable (gold ""), where only an empty prediction scores 1;
F1 of two empty token lists is 1, of one empty list 0. With no-answer odds (BERT's
null_odds.json) a prediction becomes "" when its odds exceed a threshold, and the threshold
search gives the best EM and F1 and their thresholds. Results add HasAns_* and NoAns_*.

One deliberate difference: a question without a prediction counts as wrong in both versions
(v1.1 does so; v2.0 drops it from the total, or crashes when it is answerable).
"""

from __future__ import annotations

import collections
import re
import string

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    """Lower case, drop punctuation and articles, collapse whitespace (the official order)."""
    text = text.lower()
    text = "".join(char for char in text if char not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction: str, gold: str, empty_matches_empty: bool = True) -> float:
    """Token F1 of the normalised texts. One empty text gets 0; two empty texts get 1 in v2.0
    (empty_matches_empty) and 0 in v1.1, whose script knew no empty answers."""
    prediction_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not prediction_tokens or not gold_tokens:
        return float(empty_matches_empty and prediction_tokens == gold_tokens)
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def question_answers(data: list[dict], version_2: bool) -> list[tuple[str, list[str]]]:
    """(question id, its gold answer texts) for every question of a SQuAD file's `data` list,
    in file order, a repeated id as often as it occurs. For v2.0 answers that normalise to ""
    are dropped and an unanswerable question gets [""]."""
    questions = []
    for article in data:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                texts = [answer["text"] for answer in qa.get("answers", [])]
                if version_2:
                    texts = [text for text in texts if normalize_answer(text)] or [""]
                questions.append((str(qa["id"]), texts))
    return questions


def gold_answers(data: list[dict], version_2: bool) -> dict[str, list[str]]:
    """question id -> its gold answer texts (question_answers; a repeated id keeps its last
    question's, as evaluate-v2.0.py's dict does)."""
    return dict(question_answers(data, version_2))


def _question_scores(prediction: str | None, answers: list[str], version_2: bool):
    """(exact match, F1) of one question: the best over its gold answers; 0 without a
    prediction."""
    if prediction is None:
        return 0.0, 0.0
    return (
        max(exact_match(prediction, gold) for gold in answers),
        max(f1(prediction, gold, version_2) for gold in answers),
    )


def _raw_scores(golds, predictions, version_2):
    exact, f1_scores = {}, {}
    for qid, answers in golds.items():
        exact[qid], f1_scores[qid] = _question_scores(predictions.get(qid), answers, version_2)
    return exact, f1_scores


def _apply_no_answer_threshold(scores, no_answer_odds, has_answer, threshold):
    """A question whose odds exceed `threshold` is predicted unanswerable: 1 if it is."""
    return {
        qid: (float(not has_answer[qid]) if no_answer_odds[qid] > threshold else score)
        for qid, score in scores.items()
    }


def _percent(scores, qids):
    return 100.0 * sum(scores[qid] for qid in qids) / len(qids) if qids else 0.0


def best_threshold(
    scores,
    predictions,
    no_answer_odds,
    has_answer,
    abstain_threshold: float = 0.0,
    group_ties: bool = False,
) -> tuple[float, float]:
    """(best score in percent, its threshold): the official find_best_thresh. Questions are
    visited by increasing odds; answering each one (instead of abstaining) changes the count by
    its score if answerable, by -1 if not and the prediction is non-empty. When abstaining on
    every question is best, the threshold is `abstain_threshold` (the official 0.0, meant for
    probabilities in [0, 1]).

    The official search scores a threshold after each question, also between questions of equal
    odds, which no threshold separates (`odds > threshold` abstains on all of them or none): its
    best score may be one that no threshold reaches. `group_ties` scores only after the last
    question of each odds value, so that the threshold returned gives the score returned (what
    a threshold to predict with needs); without it the figures equal evaluate-v2.0.py's.
    """
    current = best = sum(1 for qid in scores if not has_answer[qid])
    threshold = abstain_threshold
    ordered = sorted(scores, key=lambda qid: no_answer_odds[qid])
    for index, qid in enumerate(ordered):
        if has_answer[qid]:
            current += scores[qid]
        elif predictions.get(qid):
            current -= 1
        tie_follows = (
            index + 1 < len(ordered) and no_answer_odds[ordered[index + 1]] == no_answer_odds[qid]
        )
        if group_ties and tie_follows:
            continue
        if current > best:
            best, threshold = current, no_answer_odds[qid]
    return 100.0 * best / len(scores), float(threshold)


def squad_v1_scores(data: list[dict], predictions: dict[str, str]) -> dict:
    """{"exact_match", "f1"} in percent (evaluate-v1.1.py), plus "total" and "missing".

    As evaluate-v1.1.py, every question of the file counts, a repeated id as often as it occurs
    (each scored against its own answers with the id's one prediction).
    """
    questions = question_answers(data, version_2=False)
    scores = [_question_scores(predictions.get(qid), answers, False) for qid, answers in questions]
    total = len(scores)
    return {
        "exact_match": 100.0 * sum(exact for exact, _ in scores) / total if total else 0.0,
        "f1": 100.0 * sum(f1_score for _, f1_score in scores) / total if total else 0.0,
        "total": total,
        "missing": sum(qid not in predictions for qid, _ in questions),
    }


def squad_v2_scores(
    data: list[dict],
    predictions: dict[str, str],
    no_answer_odds: dict[str, float] | None = None,
    no_answer_threshold: float = 1.0,
) -> dict:
    """evaluate-v2.0.py's results: exact, f1, total, HasAns_exact/f1/total, NoAns_exact/f1/total
    (when there are such questions) and, given no-answer odds, best_exact, best_exact_thresh,
    best_f1, best_f1_thresh. Also "missing" (questions without a prediction).

    Args:
      data: the `data` list of the SQuAD v2.0 file.
      predictions: question id -> answer text ("" for no answer).
      no_answer_odds: question id -> odds that it has no answer (BERT: null_odds.json, the score
        difference null - best span); None for none (all 0, as the official script).
      no_answer_threshold: odds above it turn a prediction into "" (the script's
        --na-prob-thresh; pass the null_score_diff_threshold predictions were made with to
        score them as written).
    """
    golds = gold_answers(data, version_2=True)
    has_answer = {qid: bool(answers[0]) for qid, answers in golds.items()}
    odds = {qid: 0.0 for qid in golds}
    if no_answer_odds is not None:
        odds.update({qid: float(no_answer_odds.get(qid, 0.0)) for qid in golds})
    exact, f1_scores = _raw_scores(golds, predictions, version_2=True)
    exact_thresholded = _apply_no_answer_threshold(exact, odds, has_answer, no_answer_threshold)
    f1_thresholded = _apply_no_answer_threshold(f1_scores, odds, has_answer, no_answer_threshold)
    qids = list(golds)
    results = {
        "exact": _percent(exact_thresholded, qids),
        "f1": _percent(f1_thresholded, qids),
        "total": len(qids),
    }
    for prefix, subset in (
        ("HasAns", [qid for qid in qids if has_answer[qid]]),
        ("NoAns", [qid for qid in qids if not has_answer[qid]]),
    ):
        if subset:
            results[f"{prefix}_exact"] = _percent(exact_thresholded, subset)
            results[f"{prefix}_f1"] = _percent(f1_thresholded, subset)
            results[f"{prefix}_total"] = len(subset)
    if no_answer_odds is not None:
        results["best_exact"], results["best_exact_thresh"] = best_threshold(
            exact, predictions, odds, has_answer
        )
        results["best_f1"], results["best_f1_thresh"] = best_threshold(
            f1_scores, predictions, odds, has_answer
        )
    results["missing"] = sum(1 for qid in qids if qid not in predictions)
    return results


def tune_no_answer_threshold(
    data: list[dict], best_non_null: dict[str, str], no_answer_odds: dict[str, float]
) -> dict:
    """The null_score_diff_threshold that maximises v2.0 F1 on `data`, and the scores with it.

    The search runs over each question's best non-null answer (what a threshold chooses from),
    not over predictions already thresholded: with those, an answer hidden as "" at the old
    threshold would count as empty at every new one. BERT's odds are score differences of any
    sign, so "abstain everywhere" is a threshold below all of them, not the official 0.0.

    Returns:
      the v2.0 scores of the re-thresholded answers, plus "null_score_diff_threshold".
    """
    golds = gold_answers(data, version_2=True)
    has_answer = {qid: bool(answers[0]) for qid, answers in golds.items()}
    odds = {qid: float(no_answer_odds.get(qid, 0.0)) for qid in golds}
    _, f1_scores = _raw_scores(golds, best_non_null, version_2=True)
    lowest = min(odds.values(), default=0.0)
    _, threshold = best_threshold(
        f1_scores, best_non_null, odds, has_answer, lowest - 1.0, group_ties=True
    )
    answers = {qid: ("" if odds[qid] > threshold else text) for qid, text in best_non_null.items()}
    results = squad_v2_scores(data, answers)
    results["null_score_diff_threshold"] = threshold
    return results
