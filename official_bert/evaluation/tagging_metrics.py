"""Token tagging metrics: word accuracy, and entity-level precision, recall and F1 as the CoNLL
shared tasks' `conlleval` script computes them.

Written by hand because conlleval is a Perl script and seqeval is not part of this project's
stack. The chunk rules below are conlleval's `startOfChunk` / `endOfChunk` with the S- (single
word) tag of IOBES added as seqeval adds it, so IOB1 (CoNLL-2003's own files, where a chunk may
start with I-), IOB2 (BIO) and IOBES tags are all scored as those tools score them: an entity
counts when its type, first and last word all match. BMES, the spelling of IOBES in Chinese
corpora (Lattice-LSTM's Resume files), is read with M- as I-.
"""

from __future__ import annotations

import collections

import numpy as np

_SPAN_PREFIXES = ("B", "I", "M", "E", "S")


def split_tag(tag: str) -> tuple[str, str]:
    """(prefix, type) of a tag: "B-PER" -> ("B", "PER"), "O" -> ("O", ""); BMES's middle
    "M-PER" -> ("I", "PER")."""
    if tag == "O":
        return "O", ""
    prefix, _, entity_type = tag.partition("-")
    return "I" if prefix == "M" else prefix, entity_type


def is_span_tag_set(labels: list[str]) -> bool:
    """Whether the tags name entities (O, and <B|I|E|S>-<type>) rather than word classes (POS)."""
    return any(tag != "O" for tag in labels) and all(
        tag == "O" or (split_tag(tag)[0] in _SPAN_PREFIXES and split_tag(tag)[1]) for tag in labels
    )


def _ends_chunk(previous: str, current: str, previous_type: str, current_type: str) -> bool:
    if previous in ("E", "S"):
        return True
    if previous in ("B", "I") and current in ("B", "S", "O"):
        return True
    return previous != "O" and previous_type != current_type


def _starts_chunk(previous: str, current: str, previous_type: str, current_type: str) -> bool:
    if current in ("B", "S"):
        return True
    if current in ("E", "I") and previous in ("E", "S", "O"):
        return True
    return current != "O" and previous_type != current_type


def chunk_boundary_tables(labels: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The chunk rules of `entity_spans` as tables over tag ids, for code that runs on ids (the
    tagging serving model): (starts, ends), each bool [len(labels) + 1, len(labels) + 1]
    indexed [previous tag, current tag], id len(labels) standing for the "O" before a sentence
    and after it. starts: the current word starts an entity; ends: the previous word ends one
    (when one is open)."""
    tags = [split_tag(tag) for tag in labels] + [("O", "")]
    starts = np.array([[_starts_chunk(p, c, pt, ct) for c, ct in tags] for p, pt in tags])
    ends = np.array([[_ends_chunk(p, c, pt, ct) for c, ct in tags] for p, pt in tags])
    return starts, ends


def entity_spans(tags: list[str]) -> set[tuple[str, int, int]]:
    """The entities of one sentence's tags as (type, first word, last word)."""
    spans = set()
    start = None
    previous, previous_type = "O", ""
    for position, tag in enumerate([*tags, "O"]):  # a final O closes the last chunk
        current, current_type = split_tag(tag)
        if start is not None and _ends_chunk(previous, current, previous_type, current_type):
            spans.add((previous_type, start, position - 1))
            start = None
        if _starts_chunk(previous, current, previous_type, current_type):
            start = position
        previous, previous_type = current, current_type
    return spans


def tagging_metrics(
    true_tags: list[list[str]], predicted_tags: list[list[str]], labels: list[str]
) -> dict[str, float]:
    """Metrics of a tagged file.

    Args:
      true_tags: per sentence, the gold tag of each word.
      predicted_tags: per sentence, the predicted tag of each word (same lengths).
      labels: the tag set; entity metrics are computed when it names entities (is_span_tag_set).

    Returns:
      {"accuracy"} (over words), and for entity tag sets "precision", "recall", "f1" (micro over
      entities, in [0, 1]) and "<type>_f1" per entity type of the gold or predicted tags.
    """
    if len(true_tags) != len(predicted_tags):
        raise ValueError(f"{len(true_tags)} gold sentences but {len(predicted_tags)} predicted")
    correct_words = total_words = 0
    found = collections.Counter()  # per type: predicted, gold, correct entities
    gold = collections.Counter()
    correct = collections.Counter()
    spans = is_span_tag_set(labels)
    for index, (truth, prediction) in enumerate(zip(true_tags, predicted_tags, strict=True)):
        if len(truth) != len(prediction):
            raise ValueError(
                f"sentence {index}: {len(truth)} gold tags but {len(prediction)} predicted"
            )
        correct_words += sum(a == b for a, b in zip(truth, prediction, strict=True))
        total_words += len(truth)
        if spans:
            true_spans, predicted_spans = entity_spans(truth), entity_spans(prediction)
            gold.update(span[0] for span in true_spans)
            found.update(span[0] for span in predicted_spans)
            correct.update(span[0] for span in true_spans & predicted_spans)
    metrics = {"accuracy": correct_words / total_words if total_words else 0.0}
    if spans:
        metrics.update(
            _precision_recall_f1(sum(correct.values()), sum(found.values()), sum(gold.values()))
        )
        for entity_type in sorted(set(gold) | set(found)):
            scores = _precision_recall_f1(
                correct[entity_type], found[entity_type], gold[entity_type]
            )
            metrics[f"{entity_type}_f1"] = scores["f1"]
    return metrics


def _precision_recall_f1(correct: int, found: int, gold: int) -> dict[str, float]:
    precision = correct / found if found else 0.0
    recall = correct / gold if gold else 0.0
    total = precision + recall
    return {
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / total if total else 0.0,
    }
