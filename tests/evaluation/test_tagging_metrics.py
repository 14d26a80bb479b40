"""Entity F1 as conlleval scores it, on hand-checked sentences."""

import pytest

from official_bert.evaluation.tagging_metrics import entity_spans, is_span_tag_set, tagging_metrics

NER_TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


@pytest.mark.parametrize(
    "tags, spans",
    [
        # BIO
        (["B-PER", "I-PER", "O", "B-LOC"], {("PER", 0, 1), ("LOC", 3, 3)}),
        # IOB1 (CoNLL-2003's files): I- after O starts an entity, B- only splits two of a type.
        (["I-PER", "I-PER", "B-PER", "O", "I-LOC"], {("PER", 0, 1), ("PER", 2, 2), ("LOC", 4, 4)}),
        # A change of type ends one entity and starts another, whatever the prefix.
        (["B-PER", "I-LOC", "I-LOC"], {("PER", 0, 0), ("LOC", 1, 2)}),
        # IOBES
        (
            ["S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC"],
            {("PER", 0, 0), ("LOC", 1, 3), ("LOC", 4, 4)},
        ),
        # BMES (Chinese corpora): M- is a middle character, as I- in IOBES.
        (
            ["B-ORG", "M-ORG", "M-ORG", "E-ORG", "S-PER", "O", "B-LOC", "E-LOC"],
            {("ORG", 0, 3), ("PER", 4, 4), ("LOC", 6, 7)},
        ),
        # An entity at the end of the sentence is closed.
        (["O", "O", "B-LOC", "I-LOC"], {("LOC", 2, 3)}),
        (["O", "O"], set()),
    ],
)
def test_entity_spans(tags, spans):
    assert entity_spans(tags) == spans


def test_precision_recall_and_f1_count_whole_entities():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-LOC", "O", "B-PER"]]
    # Sentence 1: PER right, LOC missed. Sentence 2: the LOC tagged PER, a spurious LOC, PER right.
    predicted = [["B-PER", "I-PER", "O", "O"], ["B-PER", "B-LOC", "B-PER"]]
    metrics = tagging_metrics(gold, predicted, NER_TAGS)
    # 4 gold entities, 4 predicted, 2 correct (the two PER spans that match exactly).
    assert metrics["precision"] == pytest.approx(2 / 4)
    assert metrics["recall"] == pytest.approx(2 / 4)
    assert metrics["f1"] == pytest.approx(0.5)
    # PER: found 3 (one wrong), gold 2, correct 2; LOC: found 1, gold 2, correct 0.
    assert metrics["PER_f1"] == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))
    assert metrics["LOC_f1"] == 0.0
    assert metrics["accuracy"] == pytest.approx(4 / 7)


def test_bioes_entity_scores_by_hand():
    """Characters of 张三在北京大学 (PER 张三, ORG 北京大学) tagged in BIOES; the prediction cuts
    北京 out as a LOC and tags 大学 as an ORG, and finds 张三 whole."""
    labels = ["O", "B-PER", "E-PER", "S-PER", "B-LOC", "E-LOC", "B-ORG", "I-ORG", "E-ORG"]
    gold = [["B-PER", "E-PER", "O", "B-ORG", "I-ORG", "I-ORG", "E-ORG"]]
    predicted = [["B-PER", "E-PER", "O", "B-LOC", "E-LOC", "B-ORG", "E-ORG"]]
    metrics = tagging_metrics(gold, predicted, labels)
    # Gold: PER(0-1), ORG(3-6). Predicted: PER(0-1), LOC(3-4), ORG(5-6). Correct: PER only.
    assert metrics["precision"] == pytest.approx(1 / 3)
    assert metrics["recall"] == pytest.approx(1 / 2)
    assert metrics["f1"] == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))
    assert metrics["PER_f1"] == 1.0 and metrics["ORG_f1"] == 0.0 and metrics["LOC_f1"] == 0.0
    # Characters right: 张, 三, 在 and the final E-ORG of 学.
    assert metrics["accuracy"] == pytest.approx(4 / 7)
    assert is_span_tag_set(["O", "B-ORG", "M-ORG", "E-ORG", "S-ORG"])


def test_a_partial_entity_is_wrong():
    metrics = tagging_metrics([["B-PER", "I-PER", "I-PER"]], [["B-PER", "I-PER", "O"]], NER_TAGS)
    assert metrics["f1"] == 0.0 and metrics["accuracy"] == pytest.approx(2 / 3)


def test_word_class_tags_get_accuracy_only():
    assert not is_span_tag_set(["NN", "VB", "DT"])
    assert not is_span_tag_set(["O"])
    assert is_span_tag_set(NER_TAGS)
    metrics = tagging_metrics([["DT", "NN", "VB"]], [["DT", "NN", "NN"]], ["DT", "NN", "VB"])
    assert metrics == {"accuracy": pytest.approx(2 / 3)}


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="sentence 0: 2 gold tags but 1 predicted"):
        tagging_metrics([["O", "O"]], [["O"]], NER_TAGS)
