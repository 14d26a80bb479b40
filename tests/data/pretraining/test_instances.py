import random

import numpy as np

from official_bert.data.pretraining.instances import (
    TokenizedDocument,
    _truncate_pair,
    create_instances_from_document,
    pack_instances,
)


def test_truncation_counts_equal_the_original_loop():
    def original_loop(length_a, length_b, max_num_tokens):
        cut_a = cut_b = 0
        while length_a + length_b > max_num_tokens:
            if length_a > length_b:
                length_a, cut_a = length_a - 1, cut_a + 1
            else:
                length_b, cut_b = length_b - 1, cut_b + 1
        return cut_a, cut_b

    rng = random.Random(0)
    for length_a in range(40):
        for length_b in range(40):
            for max_num_tokens in (1, 9, 30, 125):
                (fa, ba), (fb, bb) = _truncate_pair(length_a, length_b, max_num_tokens, rng)
                assert min(fa, ba, fb, bb) >= 0
                assert (fa + ba, fb + bb) == original_loop(length_a, length_b, max_num_tokens)
    fronts = [_truncate_pair(100, 0, 0, rng)[0][0] for _ in range(2000)]
    assert abs(np.mean(fronts) - 50) < 1.0  # Binomial(100, 1/2)


def _documents(rng, count=30):
    documents = []
    for d in range(count):
        sentences = [
            np.full(rng.integers(1, 30), 100 * d + s, np.int32) for s in range(rng.integers(1, 12))
        ]
        documents.append(TokenizedDocument.from_sentences(sentences))
    return documents


def test_instances_follow_the_original_rules():
    rng = np.random.default_rng(0)
    documents = _documents(rng)
    python_rng = random.Random(1)
    max_seq_length = 64
    instances = []
    for index in range(len(documents)):
        instances += [
            (index, instance)
            for instance in create_instances_from_document(
                documents, index, max_seq_length, 0.1, python_rng
            )
        ]
    random_next = 0
    for index, instance in instances:
        a, b = instance.segments(documents)
        assert len(a) >= 1 and len(b) >= 1
        assert len(a) + len(b) <= max_seq_length - 3
        assert instance.a_document == index
        if instance.is_random_next:
            random_next += 1
            assert instance.b_document != index or len(documents) == 1
        else:
            # The real continuation: B starts where A ends in the same document.
            assert instance.b_document == index and instance.b_start >= instance.a_end
    assert 0.4 < random_next / len(instances) < 0.75
    packed = pack_instances([i for _, i in instances], documents, max_seq_length, 101, 102)
    row = 3
    a, b = instances[row][1].segments(documents)
    expected = [101, *a, 102, *b, 102]
    assert packed.input_ids[row, : len(expected)].tolist() == expected
    assert packed.segment_ids[row, : len(expected)].tolist() == [0] * (len(a) + 2) + [1] * (
        len(b) + 1
    )
    assert packed.lengths[row] == len(expected) and not packed.input_ids[row, len(expected) :].any()


def test_mlm_only_instances_are_single_segments():
    documents = _documents(np.random.default_rng(2), count=5)
    instances = create_instances_from_document(
        documents, 0, 32, 0.0, random.Random(0), next_sentence=False
    )
    covered = []
    for instance in instances:
        assert instance.b_document == -1 and not instance.is_random_next
        a, b = instance.segments(documents)
        assert b is None and 1 <= len(a) <= 30
        covered.append((instance.a_start, instance.a_end))
    assert covered[0][0] == 0 and covered == sorted(covered)
