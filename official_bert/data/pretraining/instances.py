"""Pre-training instances from tokenized documents, built as the original
create_pretraining_data.py builds them (create_instances_from_document)."""

from __future__ import annotations

import dataclasses
import itertools
import random
import typing
from bisect import bisect_left

import numpy as np


@dataclasses.dataclass
class TokenizedDocument:
    """A document as one int32 array of wordpiece ids and the offsets of its sentences
    (sentence k is tokens[offsets[k]:offsets[k + 1]]; every sentence is non-empty), and, with a
    word segmenter, bool `continues_word` beside `tokens`: True for a piece that continues the
    word of the piece before it (word_segmentation); None: the "##" rule decides."""

    tokens: np.ndarray
    offsets: list[int]
    continues_word: np.ndarray | None = None

    @classmethod
    def from_sentences(
        cls, sentences: list[np.ndarray], continues_word: list[np.ndarray] | None = None
    ) -> TokenizedDocument:
        offsets = [0]
        for sentence in sentences:
            offsets.append(offsets[-1] + len(sentence))
        marks = None if continues_word is None else np.concatenate(continues_word).astype(bool)
        return cls(np.concatenate(sentences).astype(np.int32), offsets, marks)

    @property
    def num_sentences(self) -> int:
        return len(self.offsets) - 1


class Instance(typing.NamedTuple):
    """Segment A = documents[a_document].tokens[a_start:a_end], segment B likewise (b_document
    is -1 for MLM-only instances), whether B is a random segment, and whether the document drew a
    short target length. Spans index the tokens, so building an instance copies nothing; a tuple,
    so that many of them become one int array at once (`pack_instances`)."""

    a_document: int
    a_start: int
    a_end: int
    b_document: int
    b_start: int
    b_end: int
    is_random_next: bool
    is_short_target: bool

    def segments(self, documents: list[TokenizedDocument]) -> tuple[np.ndarray, np.ndarray | None]:
        tokens_a = documents[self.a_document].tokens[self.a_start : self.a_end]
        if self.b_document < 0:
            return tokens_a, None
        return tokens_a, documents[self.b_document].tokens[self.b_start : self.b_end]


def _truncate_pair(length_a: int, length_b: int, max_num_tokens: int, rng: random.Random):
    """How many tokens to cut from the (front, back) of A and of B.

    The original truncate_seq_pair cuts one token at a time from the longer segment (B on
    ties), from its front or back with probability 1/2 each. Which segment loses how many tokens
    follows from the lengths alone, and the front/back split of n independent fair choices is
    Binomial(n, 1/2): the same distribution, without a loop per token.
    """
    excess = length_a + length_b - max_num_tokens
    if excess <= 0:
        return (0, 0), (0, 0)
    first = min(excess, abs(length_a - length_b))
    cut_a, cut_b = (first, 0) if length_a > length_b else (0, first)
    remaining = excess - first  # equal lengths now: B, A, B, A, ...
    cut_b += (remaining + 1) // 2
    cut_a += remaining // 2
    front_a = rng.getrandbits(cut_a).bit_count() if cut_a else 0
    front_b = rng.getrandbits(cut_b).bit_count() if cut_b else 0
    return (front_a, cut_a - front_a), (front_b, cut_b - front_b)


def create_instances_from_document(
    documents: list[TokenizedDocument],
    document_index: int,
    max_seq_length: int,
    short_seq_prob: float,
    rng: random.Random,
    next_sentence: bool = True,
) -> list[Instance]:
    """The instances of one document.

    Random "next" segments come from the other documents of `documents` (the pool). The target
    length is drawn once per document, as in the original: short (uniform in
    [2, max_num_tokens]) with probability short_seq_prob. Without `next_sentence`, instances are
    single segments of consecutive sentences ([CLS] A [SEP]) for MLM-only pre-training.

    The original walks the sentences one by one until a chunk reaches the target length; here
    a binary search over the sentence offsets finds that sentence (and the end of a random B
    segment) at once. The random draws, their order and so the instances are the original
    walk's: only the scanning is cheaper, as this runs once per document and dupe pass.
    """
    document = documents[document_index]
    offsets = document.offsets
    max_num_tokens = max_seq_length - (3 if next_sentence else 2)
    random_float = rng.random
    target_seq_length = max_num_tokens
    is_short = False
    if random_float() < short_seq_prob:
        # rng.randint(2, max_num_tokens) from one float draw, as every draw below: about 20x
        # cheaper, with a bias below 2**-50 for any range here.
        target_seq_length = 2 + int(random_float() * (max_num_tokens - 1))
        is_short = True

    instances = []
    append = instances.append
    make = tuple.__new__  # Instance(...) without NamedTuple's Python-level __new__
    last_sentence = document.num_sentences - 1
    num_documents = len(documents)
    chunk_start = 0  # first sentence of the current chunk
    while chunk_start <= last_sentence:
        # The chunk ends at the first sentence i that brings it to the target length, or at the
        # document's last sentence: offsets[i + 1] >= offsets[chunk_start] + target.
        i = bisect_left(offsets, offsets[chunk_start] + target_seq_length, chunk_start + 1) - 1
        if i > last_sentence:
            i = last_sentence
        chunk_size = i + 1 - chunk_start
        if not next_sentence:
            start = offsets[chunk_start]
            end = min(offsets[i + 1], start + max_num_tokens)
            append(make(Instance, (document_index, start, end, -1, 0, 0, False, is_short)))
            chunk_start = i + 1
            continue
        # rng.randint(1, chunk_size - 1).
        a_end = 1 + int(random_float() * (chunk_size - 1)) if chunk_size >= 2 else 1
        a_start, a_stop = offsets[chunk_start], offsets[chunk_start + a_end]
        if chunk_size == 1 or random_float() < 0.5:
            is_random_next = True
            target_b_length = target_seq_length - (a_stop - a_start)
            # As the original: up to 10 tries to draw a document other than this one.
            for _ in range(10):
                b_document = int(random_float() * num_documents)
                if b_document != document_index:
                    break
            b_offsets = documents[b_document].offsets
            b_last = len(b_offsets) - 1
            first = int(random_float() * b_last)  # rng.randint(0, sentences - 1)
            # B runs from sentence `first` until it reaches target_b_length (at least one
            # sentence, at most to the document's end).
            last = bisect_left(b_offsets, b_offsets[first] + target_b_length, first + 1)
            if last > b_last:
                last = b_last
            b_start, b_stop = b_offsets[first], b_offsets[last]
            # The sentences of this chunk that A did not use are read again.
            i = chunk_start + a_end - 1
        else:
            is_random_next = False
            b_document = document_index
            b_start, b_stop = a_stop, offsets[i + 1]
        if (a_stop - a_start) + (b_stop - b_start) > max_num_tokens:
            (a_front, a_back), (b_front, b_back) = _truncate_pair(
                a_stop - a_start, b_stop - b_start, max_num_tokens, rng
            )
            a_start += a_front
            a_stop -= a_back
            b_start += b_front
            b_stop -= b_back
        append(
            make(
                Instance,
                (
                    document_index,
                    a_start,
                    a_stop,
                    b_document,
                    b_start,
                    b_stop,
                    is_random_next,
                    is_short,
                ),
            )
        )
        chunk_start = i + 1
    return instances


@dataclasses.dataclass
class PackedInstances:
    """Instances as arrays: input_ids int32 [N, S] ([CLS] A [SEP] B [SEP], zero padded),
    segment_ids uint8 [N, S] (0 or 1: the one byte a value the Example encoder writes, without
    a wider copy), lengths int64 [N], next_sentence_labels int32 [N] (1 = random B), is_short
    bool [N], and continues_word bool [N, S] when the documents carry word marks (False at
    [CLS], [SEP] and padding), else None."""

    input_ids: np.ndarray
    segment_ids: np.ndarray
    lengths: np.ndarray
    next_sentence_labels: np.ndarray
    is_short: np.ndarray
    continues_word: np.ndarray | None = None


def pack_instances(
    instances: list[Instance],
    documents: list[TokenizedDocument],
    max_seq_length: int,
    cls_id: int,
    sep_id: int,
) -> PackedInstances:
    """[CLS] A [SEP] B [SEP] for every instance, built with one vectorized gather."""
    count = len(instances)
    # Columns as Instance's fields: the spans, then is_random_next and is_short_target.
    # (np.fromiter over the flattened tuples: several times faster than np.array on tuples.)
    width = len(Instance._fields)
    fields = np.fromiter(
        itertools.chain.from_iterable(instances), np.int64, count=count * width
    ).reshape(count, width)
    spans = fields[:, :6]
    bases = np.cumsum([0] + [len(d.tokens) for d in documents])
    flat = np.concatenate([d.tokens for d in documents] + [np.zeros(1, np.int32)])
    a_from = bases[spans[:, 0]] + spans[:, 1]
    a_length = spans[:, 2] - spans[:, 1]
    has_b = spans[:, 3] >= 0
    b_from = np.where(has_b, bases[np.maximum(spans[:, 3], 0)] + spans[:, 4], 0)
    b_length = np.where(has_b, spans[:, 5] - spans[:, 4], -1)  # -1: no B and no second [SEP]
    lengths = a_length + 2 + (b_length + 1)
    # int32 from here (the chunk's tokens number far fewer than 2**31): half the memory traffic.
    sentinel = len(flat) - 1  # the zero after the last document: padding reads it
    position = np.arange(max_seq_length, dtype=np.int32)[None, :]
    a_end = (a_length + 1).astype(np.int32)[:, None]
    b_end = (a_length + 2 + b_length).astype(np.int32)[:, None]
    in_a = (position >= 1) & (position < a_end)
    in_b = (position > a_end) & (position < b_end)
    first_a = (a_from - 1).astype(np.int32)[:, None]  # source index = position + first
    first_b = b_from.astype(np.int32)[:, None] - a_end - 1
    source = position + np.where(position <= a_end, first_a, first_b)
    gather = np.where(in_a | in_b, source, sentinel)
    input_ids = flat[gather]
    input_ids[:, 0] = cls_id
    rows = np.arange(count)
    input_ids[rows, a_end[:, 0]] = sep_id
    input_ids[rows[has_b], b_end[has_b, 0]] = sep_id
    segment_ids = ((position > a_end) & (position <= b_end)).view(np.uint8)
    labels = fields[:, 6].astype(np.int32)
    is_short = fields[:, 7].astype(bool)
    continues_word = None
    if documents and documents[0].continues_word is not None:
        flat_marks = np.concatenate([d.continues_word for d in documents] + [np.zeros(1, bool)])
        continues_word = flat_marks[gather]  # the sentinel (False) at [CLS], [SEP], padding
    return PackedInstances(
        input_ids, segment_ids, lengths.astype(np.int64), labels, is_short, continues_word
    )
