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


def _walk_sentence_by_sentence(
    documents, document_index, max_seq_length, short_seq_prob, rng, next_sentence
):
    """The original create_instances_from_document's walk over the sentences one at a time
    (as this module did before its binary search), as (A span, B span, random next, short)."""

    def randint(low, high):  # the module's draw for rng.randint(low, high)
        return low + int(rng.random() * (high - low + 1))

    offsets = documents[document_index].offsets
    max_num_tokens = max_seq_length - (3 if next_sentence else 2)
    target, is_short = max_num_tokens, False
    if rng.random() < short_seq_prob:
        target, is_short = randint(2, max_num_tokens), True
    instances, chunk_start, i = [], 0, 0
    while i < len(offsets) - 1:
        if i == len(offsets) - 2 or offsets[i + 1] - offsets[chunk_start] >= target:
            chunk_size = i + 1 - chunk_start
            if not next_sentence:
                end = min(offsets[i + 1], offsets[chunk_start] + max_num_tokens)
                instances.append(
                    (document_index, offsets[chunk_start], end, -1, 0, 0, False, is_short)
                )
                chunk_start, i = i + 1, i + 1
                continue
            a_end = randint(1, chunk_size - 1) if chunk_size >= 2 else 1
            a_start, a_stop = offsets[chunk_start], offsets[chunk_start + a_end]
            if chunk_size == 1 or rng.random() < 0.5:
                for _ in range(10):
                    b_document = randint(0, len(documents) - 1)
                    if b_document != document_index:
                        break
                b_offsets = documents[b_document].offsets
                first = randint(0, len(b_offsets) - 2)
                last = first + 1
                while (
                    b_offsets[last] - b_offsets[first] < target - (a_stop - a_start)
                    and last < len(b_offsets) - 1
                ):
                    last += 1
                b_start, b_stop, random_next = b_offsets[first], b_offsets[last], True
                i -= chunk_size - a_end
            else:
                b_document, b_start, b_stop, random_next = (
                    document_index,
                    a_stop,
                    offsets[i + 1],
                    False,
                )
            (af, ab), (bf, bb) = _truncate_pair(
                a_stop - a_start, b_stop - b_start, max_num_tokens, rng
            )
            instances.append(
                (
                    document_index,
                    a_start + af,
                    a_stop - ab,
                    b_document,
                    b_start + bf,
                    b_stop - bb,
                    random_next,
                    is_short,
                )
            )
            chunk_start = i + 1
        i += 1
    return instances


def test_instances_and_random_draws_equal_the_sentence_by_sentence_walk():
    # Short documents, long sentences and one-sentence documents; short targets often.
    for seed in range(6):
        documents = _documents(np.random.default_rng(seed), count=12)
        for max_seq_length, next_sentence in ((8, True), (40, True), (128, True), (30, False)):
            ours, walked = random.Random(seed), random.Random(seed)
            for _ in range(3):
                for index in range(len(documents)):
                    expected = _walk_sentence_by_sentence(
                        documents, index, max_seq_length, 0.3, walked, next_sentence
                    )
                    got = create_instances_from_document(
                        documents, index, max_seq_length, 0.3, ours, next_sentence
                    )
                    assert [tuple(instance) for instance in got] == expected
                    assert ours.getstate() == walked.getstate()
