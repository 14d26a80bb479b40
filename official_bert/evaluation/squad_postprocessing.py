"""From start/end logits to answer texts, as the original run_squad.py write_predictions.

For each question, every window proposes its n_best_size best starts x n_best_size best ends;
a pair is kept when both ends lie in the window's document tokens, the start has its max context
in this window, end >= start and the span is at most max_answer_length wordpieces. The best
n_best_size distinct texts (projected back onto the original context by get_final_text) form the
n-best list; Chinese answers have the context's spaces only (`join_doc_tokens`). v2.0: the
null answer scores the lowest [CLS] start + end logits over the windows; the answer is "" when
null - best non-null span > null_score_diff_threshold.

Beyond the original: when every candidate of a v2.0 question is the null answer the original
crashed (google-research/bert#476); here the answer is "".
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import os

import numpy as np
from absl import logging

from official_bert.config import write_text_atomically
from official_bert.data.squad.examples import SquadExample, join_doc_tokens
from official_bert.data.squad.features import SquadFeature
from official_bert.tokenization import BasicTokenizer

# null_odds.json value of a question without any non-null candidate: larger than any real score
# difference, so it is unanswerable at every threshold, and still standard JSON (not Infinity).
NO_SPAN_NULL_ODDS = 1e9


@dataclasses.dataclass
class SquadPredictions:
    """predictions: question id -> answer ("" for none). nbest: question id -> [{"text",
    "probability", "start_logit", "end_logit"}]. null_odds (v2.0): question id -> score
    difference null - best non-null span. best_non_null: question id -> the best non-null text
    ("" when there is none), to re-threshold without recomputing."""

    predictions: dict[str, str]
    nbest: dict[str, list[dict]]
    null_odds: dict[str, float] | None = None
    best_non_null: dict[str, str] | None = None


def best_indexes(logits: np.ndarray, n_best_size: int) -> list[int]:
    """Indices of the n_best_size largest logits, largest first (ties: lower index first)."""
    order = sorted(range(len(logits)), key=lambda index: logits[index], reverse=True)
    return order[:n_best_size]


def softmax(scores: list[float]) -> list[float]:
    if not scores:
        return []
    largest = max(scores)
    exps = [math.exp(score - largest) for score in scores]
    total = sum(exps)
    return [value / total for value in exps]


def _strip_spaces(text: str) -> tuple[str, dict[int, int]]:
    """text without spaces, and the map of its positions to those in `text`."""
    stripped, mapping = [], {}
    for index, char in enumerate(text):
        if char == " ":
            continue
        mapping[len(stripped)] = index
        stripped.append(char)
    return "".join(stripped), mapping


def get_final_text(
    pred_text: str, orig_text: str, do_lower_case: bool, verbose_logging: bool = False
) -> str:
    """The part of orig_text (whitespace-joined original words) that the normalized wordpiece
    text pred_text covers: "(1895-1943)." with pred_text "1895" gives "1895".

    Both texts are aligned after dropping spaces; when BasicTokenizer changed the characters'
    count (e.g. accents stripped) the whole orig_text is returned, as the original.
    """
    tok_text = " ".join(BasicTokenizer(do_lower_case=do_lower_case).tokenize(orig_text))
    start_position = tok_text.find(pred_text)
    if start_position == -1:
        if verbose_logging:
            logging.info("Unable to find text: %r in %r", pred_text, orig_text)
        return orig_text
    end_position = start_position + len(pred_text) - 1
    orig_ns_text, orig_ns_to_s_map = _strip_spaces(orig_text)
    tok_ns_text, tok_ns_to_s_map = _strip_spaces(tok_text)
    if len(orig_ns_text) != len(tok_ns_text):
        if verbose_logging:
            logging.info("Length not equal after stripping spaces: %r vs %r", orig_text, tok_text)
        return orig_text
    tok_s_to_ns_map = {value: key for key, value in tok_ns_to_s_map.items()}
    orig_start = orig_ns_to_s_map.get(tok_s_to_ns_map.get(start_position, -1))
    orig_end = orig_ns_to_s_map.get(tok_s_to_ns_map.get(end_position, -1))
    if orig_start is None or orig_end is None:
        if verbose_logging:
            logging.info("Couldn't map the span %r back onto %r", pred_text, orig_text)
        return orig_text
    return orig_text[orig_start : orig_end + 1]


_Candidate = collections.namedtuple(
    "_Candidate", ["feature_index", "start_index", "end_index", "start_logit", "end_logit"]
)


def postprocess_predictions(
    examples: list[SquadExample],
    features: list[SquadFeature],
    start_logits: dict[int, np.ndarray],
    end_logits: dict[int, np.ndarray],
    n_best_size: int = 20,
    max_answer_length: int = 30,
    do_lower_case: bool = True,
    version_2_with_negative: bool = False,
    null_score_diff_threshold: float = 0.0,
    verbose_logging: bool = False,
) -> SquadPredictions:
    """Answers of every example.

    Args:
      examples, features: as read and converted for prediction.
      start_logits, end_logits: feature unique_id -> float [max_seq_length] logits.
      verbose_logging: log answers that could not be projected onto the original text.

    Raises:
      KeyError: a feature has no logits (naming its unique id).
    """
    features_by_example = collections.defaultdict(list)
    for feature in features:
        features_by_example[feature.example_index].append(feature)

    predictions, nbest_by_id, null_odds, best_non_null_by_id = {}, {}, {}, {}
    for example_index, example in enumerate(examples):
        candidates = []
        null_score = math.inf
        null_start = null_end = 0.0
        for feature_index, feature in enumerate(features_by_example[example_index]):
            if feature.unique_id not in start_logits:
                raise KeyError(f"no logits for feature {feature.unique_id} of {example.qas_id}")
            starts = np.asarray(start_logits[feature.unique_id], np.float64)
            ends = np.asarray(end_logits[feature.unique_id], np.float64)
            if version_2_with_negative and starts[0] + ends[0] < null_score:
                null_score = starts[0] + ends[0]
                null_start, null_end = float(starts[0]), float(ends[0])
            num_tokens = len(feature.tokens)
            for start in best_indexes(starts, n_best_size):
                for end in best_indexes(ends, n_best_size):
                    # The original's filters: both ends inside this window's document tokens,
                    # the start scored where it has the most context, a short, ordered span.
                    if start >= num_tokens or end >= num_tokens:
                        continue
                    if start not in feature.token_to_orig_map:
                        continue
                    if end not in feature.token_to_orig_map:
                        continue
                    if not feature.token_is_max_context.get(start, False):
                        continue
                    if end < start or end - start + 1 > max_answer_length:
                        continue
                    candidates.append(
                        _Candidate(
                            feature_index, start, end, float(starts[start]), float(ends[end])
                        )
                    )
        if version_2_with_negative:
            # The original's sentinel for the null answer: feature index of the lowest null score.
            candidates.append(_Candidate(None, 0, 0, null_start, null_end))
        candidates.sort(key=lambda c: c.start_logit + c.end_logit, reverse=True)

        nbest, seen = [], set()
        for candidate in candidates:
            if len(nbest) >= n_best_size:
                break
            if candidate.start_index > 0:
                feature = features_by_example[example_index][candidate.feature_index]
                tok_text = " ".join(feature.tokens[candidate.start_index : candidate.end_index + 1])
                # De-tokenize WordPieces that have been split off.
                tok_text = " ".join(tok_text.replace(" ##", "").replace("##", "").split())
                orig_start = feature.token_to_orig_map[candidate.start_index]
                orig_end = feature.token_to_orig_map[candidate.end_index]
                # Chinese words are rebuilt with the context's spaces only ("世界杯").
                orig_text = join_doc_tokens(
                    example.doc_tokens, example.space_before, orig_start, orig_end
                )
                text = get_final_text(tok_text, orig_text, do_lower_case, verbose_logging)
            else:
                text = ""
            if text in seen:
                continue
            seen.add(text)
            nbest.append((text, candidate.start_logit, candidate.end_logit))
        if version_2_with_negative and "" not in seen:
            nbest.append(("", null_start, null_end))
        if not nbest:
            # The original's nonce answer for the rare question without any valid span.
            nbest.append(("empty", 0.0, 0.0))

        probabilities = softmax([start + end for _, start, end in nbest])
        nbest_by_id[example.qas_id] = [
            {"text": text, "probability": p, "start_logit": start, "end_logit": end}
            for (text, start, end), p in zip(nbest, probabilities, strict=True)
        ]
        best_non_null = next((entry for entry in nbest if entry[0]), None)
        if not version_2_with_negative:
            predictions[example.qas_id] = nbest[0][0]
            continue
        if best_non_null is None:
            # Every candidate is the null answer (google-research/bert#476).
            null_odds[example.qas_id] = NO_SPAN_NULL_ODDS
            best_non_null_by_id[example.qas_id] = ""
        else:
            null_odds[example.qas_id] = null_score - best_non_null[1] - best_non_null[2]
            best_non_null_by_id[example.qas_id] = best_non_null[0]
        predictions[example.qas_id] = apply_null_threshold(
            best_non_null_by_id[example.qas_id],
            null_odds[example.qas_id],
            null_score_diff_threshold,
        )
    if not version_2_with_negative:
        return SquadPredictions(predictions, nbest_by_id)
    return SquadPredictions(predictions, nbest_by_id, null_odds, best_non_null_by_id)


def apply_null_threshold(best_non_null_text: str, null_odds: float, threshold: float) -> str:
    """The v2.0 rule: no answer when null - best span > threshold."""
    return "" if null_odds > threshold else best_non_null_text


def rethreshold(predictions: SquadPredictions, threshold: float) -> dict[str, str]:
    """v2.0 answers under another null_score_diff_threshold."""
    return {
        qid: apply_null_threshold(predictions.best_non_null[qid], odds, threshold)
        for qid, odds in predictions.null_odds.items()
    }


def write_prediction_files(output_dir: str, predictions: SquadPredictions) -> dict[str, str]:
    """predictions.json, nbest_predictions.json and (v2.0) null_odds.json, indented as the
    original; returns their paths by name."""
    paths = {
        "predictions": os.path.join(output_dir, "predictions.json"),
        "nbest_predictions": os.path.join(output_dir, "nbest_predictions.json"),
    }
    contents = {"predictions": predictions.predictions, "nbest_predictions": predictions.nbest}
    if predictions.null_odds is not None:
        paths["null_odds"] = os.path.join(output_dir, "null_odds.json")
        contents["null_odds"] = predictions.null_odds
    for name, path in paths.items():
        write_text_atomically(path, json.dumps(contents[name], indent=4) + "\n")
        logging.info("Wrote %s", path)
    return paths
