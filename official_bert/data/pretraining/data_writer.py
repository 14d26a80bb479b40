"""write_pretraining_examples: the streaming, parallel create_pretraining_data pipeline.

The corpus is read in chunks of documents; each chunk is tokenized, its instances built for every
dupe pass, masked and serialized, by helper processes or by the main process (which takes the
chunks the helpers leave); the main process writes the records in chunk order, round-robin over
the output files (with helpers and uncompressed outputs, each chunk comes framed as TFRecord
segment files by the process that made it, which the main process appends: record_segments;
the segments live in the system's temporary directory until appended). Memory is bounded by
the chunk size times the chunks in flight, not by the corpus. Every chunk draws from its own
random stream seeded by (random_seed, chunk index), so the output depends on the inputs, flags
and chunking only: the same files come out for any number of workers.

Differences from the original, by design: documents are shuffled, random "next" segments drawn
and instances shuffled within a chunk (the original does all three over the whole corpus, which
is why it holds everything in memory); and a document never runs on into the next input file.
"""

from __future__ import annotations

import collections
import dataclasses
import gc
import multiprocessing
import os
import random
import sys
import time
from typing import NamedTuple

try:
    import fcntl
except ImportError:  # not on Windows
    fcntl = None

import numpy as np
import tensorflow as tf
from absl import logging

from official_bert.atomic_output import output_target, remove_stale_temporaries
from official_bert.data import text_corpus
from official_bert.data.completed_outputs import (
    file_signature,
    read_completed_summary,
    remove_if_exists,
    write_summary,
)
from official_bert.data.example_encoding import ExampleEncoder
from official_bert.data.pretraining.dynamic_masking import MaskingRecipe, word_starts_of
from official_bert.data.pretraining.features import (
    MASKING_IDS,
    MASKING_PROBS,
    ORIGINAL_FEATURE_NAMES,
    UNMASKED_FEATURE_NAMES,
    WORD_STARTS,
    feature_names,
)
from official_bert.data.pretraining.instances import (
    Instance,
    TokenizedDocument,
    create_instances_from_document,
    pack_instances,
)
from official_bert.data.pretraining.masked_lm_sampling import (
    MaskingOptions,
    check_replacement_shares,
    sample_masked_lm,
)
from official_bert.data.pretraining.record_segments import (
    SegmentedOutput,
    append_segments,
    new_segment_directory,
    remove_segment_directory,
    write_segments,
)
from official_bert.data.pretraining.word_segmentation import (
    WORD_SEGMENTERS,
    JiebaWordSegmenter,
    attach_word_references,
    word_continuation_marks,
)
from official_bert.side_file_names import summary_path, temporary_glob, temporary_path
from official_bert.tokenization import load_vocab

_REQUIRED_TOKENS = ("[CLS]", "[SEP]", "[MASK]")
MASKING_MODES = ("static", "dynamic")
# The fewest documents a work unit holds when next-sentence pairs are made: a random B comes
# from another document of the unit (the original draws from the whole corpus, which it holds in
# memory), up to 10 tries, so with 4 documents a B from A's own document is 4**-10 likely.
MIN_DOCUMENTS_PER_CHUNK = 4


@dataclasses.dataclass(frozen=True)
class PretrainingDataSettings:
    """Everything that decides the output bytes (the summary records it).

    word_segmenter: "none" (the original's "##" words), "jieba" or "ref_file" (word_ref_files,
    one JSON list per non-blank corpus line as run_chinese_ref.py writes): whole-word masking by
    words of CJK text too (word_segmentation); a segmenter implies do_whole_word_mask.
    masking: "static" (the original: masks drawn here, dupe_factor times) or "dynamic" (records
    without masks, the masking recipe and, for whole-word masking, the word starts; the input
    pipeline of run_pretraining.py masks them afresh every epoch: dynamic_masking).
    """

    vocab_file: str
    do_lower_case: bool = True
    preserve_unused_tokens: bool = False
    do_whole_word_mask: bool = False
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    random_seed: int = 12345
    dupe_factor: int = 10
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    max_ngram_size: int = 1
    next_sentence: bool = True
    mask_token_prob: float = 0.8
    random_token_prob: float = 0.1
    keep_token_prob: float = 0.1
    decide_per_word: bool = False
    use_v2_feature_names: bool = False
    documents_per_chunk: int = 1000
    chunk_bytes: int = 512 * 1024
    word_segmenter: str = "none"
    word_ref_files: tuple[str, ...] = ()
    masking: str = "static"

    @property
    def masks_whole_words(self) -> bool:
        return self.do_whole_word_mask or self.word_segmenter != "none"

    def as_recorded(self) -> dict:
        """The settings as an output's summary records them: what the records were made with
        (a word segmenter masks whole words, the flag or not)."""
        return {**dataclasses.asdict(self), "do_whole_word_mask": self.masks_whole_words}

    def validate(self) -> None:
        if self.word_segmenter not in WORD_SEGMENTERS:
            raise ValueError(
                f"word_segmenter must be one of {WORD_SEGMENTERS}, got {self.word_segmenter!r}"
            )
        if (self.word_segmenter == "ref_file") != bool(self.word_ref_files):
            raise ValueError(
                "--word_ref_file goes with --word_segmenter=ref_file and only with it (got "
                f"word_segmenter={self.word_segmenter!r}, word_ref_files={self.word_ref_files})"
            )
        shortest = 5 if self.next_sentence else 3  # [CLS] a [SEP] b [SEP] / [CLS] a [SEP]
        if self.max_seq_length < shortest:
            raise ValueError(f"max_seq_length {self.max_seq_length} is too short for an instance")
        # 0 predictions is the original's too: instances for the next-sentence task alone.
        if self.max_predictions_per_seq < 0:
            raise ValueError(
                f"max_predictions_per_seq must be at least 0, got {self.max_predictions_per_seq}"
            )
        if self.dupe_factor < 1:
            raise ValueError(f"dupe_factor must be at least 1, got {self.dupe_factor}")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise ValueError(f"short_seq_prob must be in [0, 1], got {self.short_seq_prob}")
        if self.max_ngram_size < 1:
            raise ValueError(f"max_ngram_size must be at least 1, got {self.max_ngram_size}")
        check_replacement_shares(self.mask_token_prob, self.random_token_prob, self.keep_token_prob)
        if self.masking not in MASKING_MODES:
            raise ValueError(f"masking must be one of {MASKING_MODES}, got {self.masking!r}")
        if self.masking == "dynamic" and self.max_ngram_size > 1:
            raise ValueError(
                "--max_ngram_size > 1 needs --masking=static: the input pipeline masks whole "
                "words, not n-grams"
            )


# === Worker side ===
class ChunkProcessor:
    """Turns a CorpusChunk into serialized tf.train.Examples and statistics."""

    def __init__(self, settings: PretrainingDataSettings):
        from official_bert.tokenization import FastWordpieceBertTokenizer

        self.settings = settings
        self.tokenizer = FastWordpieceBertTokenizer(
            settings.vocab_file,
            settings.do_lower_case,
            preserve_unused_tokens=settings.preserve_unused_tokens,
        )
        vocab = load_vocab(settings.vocab_file)
        is_continuation = np.zeros(self.tokenizer.vocab_size, bool)
        for token, index in vocab.items():
            is_continuation[index] = token.startswith("##")
        self.cls_id, self.sep_id = vocab["[CLS]"], vocab["[SEP]"]
        self.masking = MaskingOptions(
            masked_lm_prob=settings.masked_lm_prob,
            max_predictions_per_seq=settings.max_predictions_per_seq,
            mask_id=vocab["[MASK]"],
            vocab_size=self.tokenizer.vocab_size,
            special_ids=(self.cls_id, self.sep_id),
            is_continuation=is_continuation,
            whole_word_mask=settings.masks_whole_words,
            max_ngram_size=settings.max_ngram_size,
            mask_token_prob=settings.mask_token_prob,
            random_token_prob=settings.random_token_prob,
            keep_token_prob=settings.keep_token_prob,
            decide_per_word=settings.decide_per_word,
        )
        names = feature_names(settings.use_v2_feature_names)
        # Original feature name -> the name written (v2 spelling or not).
        self.names = dict(zip(ORIGINAL_FEATURE_NAMES, names, strict=True))
        if settings.masking == "dynamic":
            self.recipe = MaskingRecipe(
                mask_id=vocab["[MASK]"],
                cls_id=self.cls_id,
                sep_id=self.sep_id,
                vocab_size=self.tokenizer.vocab_size,
                max_predictions_per_seq=settings.max_predictions_per_seq,
                decide_per_word=settings.decide_per_word and settings.masks_whole_words,
                masked_lm_prob=settings.masked_lm_prob,
                mask_token_prob=settings.mask_token_prob,
                random_token_prob=settings.random_token_prob,
            )
            unmasked = [self.names[n] for n in UNMASKED_FEATURE_NAMES]
            if settings.masks_whole_words:
                unmasked.append(WORD_STARTS)
            self.encoder = ExampleEncoder([*unmasked, MASKING_IDS], [MASKING_PROBS])
        else:
            self.encoder = ExampleEncoder(
                [n for n in names if n != "masked_lm_weights"], ["masked_lm_weights"]
            )
        self.is_continuation = is_continuation
        self.segmenter = JiebaWordSegmenter() if settings.word_segmenter == "jieba" else None

    def tokenize(
        self, documents: list[list[str]], word_references: list[list] | None = None
    ) -> list[TokenizedDocument | None]:
        """Each document (a list of sentences) as wordpiece ids, or None for a document with
        no wordpiece at all (dropped by the callers, as in the original). With a word
        segmenter, each piece also carries its word mark (word_segmentation); `word_references`
        (nested as `documents`) are the reference file's lines for --word_segmenter=ref_file."""
        sentences = [s for document in documents for s in document]
        marks = None
        if self.settings.word_segmenter == "none":
            ids = self.tokenizer.tokenize(sentences)  # Python str: valid UTF-8
            flat = ids.flat_values.numpy().astype(np.int32)
            splits = ids.row_splits.numpy()
        else:
            if self.settings.word_segmenter == "ref_file" and word_references is None:
                raise ValueError("--word_segmenter=ref_file: this chunk has no word references")
            references = (
                None
                if word_references is None
                else [r for document in word_references for r in document]
            )
            flat, splits, marks = word_continuation_marks(
                self.tokenizer, sentences, self.is_continuation, self.segmenter, references
            )
        tokenized, sentence = [], 0
        for document in documents:
            pieces, piece_marks = [], []
            for _ in document:
                start, end = splits[sentence], splits[sentence + 1]
                sentence += 1
                if end > start:  # lines with no wordpieces are dropped, as in the original
                    pieces.append(flat[start:end])
                    if marks is not None:
                        piece_marks.append(marks[start:end])
            tokenized.append(
                TokenizedDocument.from_sentences(pieces, piece_marks if marks is not None else None)
                if pieces
                else None
            )
        return tokenized

    def __call__(self, chunk: text_corpus.CorpusChunk) -> tuple[list[bytes], dict]:
        settings = self.settings
        seeds = np.random.SeedSequence([settings.random_seed, chunk.index])
        rng = random.Random(int(seeds.generate_state(1, np.uint64)[0]))
        np_rng = np.random.default_rng(seeds)
        documents = [
            d for d in self.tokenize(chunk.documents, chunk.word_references) if d is not None
        ]
        rng.shuffle(documents)
        instances = []
        short_passes = 0  # (document, pass) pairs that drew a short target length
        for _ in range(settings.dupe_factor):
            for document_index in range(len(documents)):
                document_instances = create_instances_from_document(
                    documents,
                    document_index,
                    settings.max_seq_length,
                    settings.short_seq_prob,
                    rng,
                    next_sentence=settings.next_sentence,
                )
                short_passes += document_instances[0].is_short_target
                instances.extend(document_instances)
        rng.shuffle(instances)
        return self.encode(instances, documents, short_passes, np_rng)

    def encode(
        self,
        instances: list[Instance],
        documents: list[TokenizedDocument],
        short_passes: int,
        np_rng: np.random.Generator,
    ) -> tuple[list[bytes], dict]:
        """Masks `instances` (spans of `documents`, in the order given) with `np_rng` and
        serializes them: (tf.train.Example bytes, one per instance; the statistics of this
        work unit, counts to be summed over all of them). short_passes: the (document, pass)
        pairs that drew a short target length."""
        settings = self.settings
        stats = collections.Counter(
            document_passes=settings.dupe_factor * len(documents),
            short_document_passes=short_passes,
            documents=len(documents),
            sentences=sum(d.num_sentences for d in documents),
            one_sentence_documents=sum(d.num_sentences == 1 for d in documents),
            instances=len(instances),
        )
        if not instances:
            return [], dict(stats)
        packed = pack_instances(
            instances, documents, settings.max_seq_length, self.cls_id, self.sep_id
        )
        if settings.masking == "dynamic":
            return self._encode_unmasked(packed, stats)
        masked = sample_masked_lm(
            packed.input_ids, packed.lengths, self.masking, np_rng, packed.continues_word
        )
        names = self.names
        records = self.encoder.encode(
            {
                names["input_ids"]: masked.input_ids,
                names["input_mask"]: _input_mask(packed),
                names["segment_ids"]: packed.segment_ids,
                names["masked_lm_positions"]: masked.masked_lm_positions,
                names["masked_lm_ids"]: masked.masked_lm_ids,
                names["masked_lm_weights"]: masked.masked_lm_weights,
                names["next_sentence_labels"]: packed.next_sentence_labels[:, None],
            }
        )
        kinds = masked.replacement_kind
        stats.update(
            tokens=int(packed.lengths.sum()),
            eligible_tokens=int(packed.lengths.sum())
            - len(instances) * (3 if settings.next_sentence else 2),
            predictions=int((kinds >= 0).sum()),
            predictions_mask=int((kinds == 0).sum()),
            predictions_random=int((kinds == 1).sum()),
            predictions_unchanged=int((kinds == 2).sum()),
            random_next=int(packed.next_sentence_labels.sum()),
            short_target=int(packed.is_short.sum()),
            at_prediction_cap=int(
                ((kinds >= 0).sum(axis=1) == settings.max_predictions_per_seq).sum()
            ),
        )
        return records, dict(stats)

    def _encode_unmasked(self, packed, stats: collections.Counter) -> tuple[list[bytes], dict]:
        """Dynamic-masking records of packed instances: no masks, the recipe in every record
        (features.unmasked_feature_spec)."""
        settings, names = self.settings, self.names
        count = len(packed.input_ids)
        arrays = {
            names["input_ids"]: packed.input_ids,
            names["input_mask"]: _input_mask(packed),
            names["segment_ids"]: packed.segment_ids,
            names["next_sentence_labels"]: packed.next_sentence_labels[:, None],
        }
        if settings.masks_whole_words:
            arrays[WORD_STARTS] = word_starts_of(
                packed.input_ids,
                packed.lengths,
                (self.cls_id, self.sep_id),
                self.is_continuation,
                packed.continues_word,
            )
        for name, values in self.recipe.feature_values().items():
            arrays[name] = np.broadcast_to(np.asarray(values), (count, len(values)))
        stats.update(
            tokens=int(packed.lengths.sum()),
            eligible_tokens=int(packed.lengths.sum())
            - count * (3 if settings.next_sentence else 2),
            random_next=int(packed.next_sentence_labels.sum()),
            short_target=int(packed.is_short.sum()),
        )
        return self.encoder.encode(arrays), dict(stats)


def _input_mask(packed) -> np.ndarray:
    """uint8 [N, S]: 1 at the tokens of each packed instance, 0 at its padding (one byte a
    value, the width the Example encoder writes, so that it makes no narrower copy)."""
    positions = np.arange(packed.input_ids.shape[1])
    return (positions[None, :] < packed.lengths[:, None]).view(np.uint8)


_WORKER: ChunkProcessor | None = None


def _init_worker(settings: PretrainingDataSettings) -> None:
    global _WORKER
    # One thread per process: the parallelism comes from the worker processes.
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    _WORKER = ChunkProcessor(settings)
    gc.freeze()  # as write_pretraining_examples (a spawned helper has imported TensorFlow too)


class FramedChunk(NamedTuple):
    """A chunk's records as segment files (record_segments), how many records they hold, and the
    chunk's statistics: what a chunk comes back as where the outputs take segments."""

    segment_paths: list[str]
    num_records: int
    stats: dict


def _frame(result: tuple[list[bytes], dict], chunk_index, segments) -> tuple | FramedChunk:
    """`result` (records, stats) as it is, or framed as segments where `segments` is
    (directory, number of outputs)."""
    if segments is None:
        return result
    directory, num_outputs = segments
    records, stats = result
    paths = write_segments(records, directory, chunk_index, num_outputs)
    return FramedChunk(paths, len(records), stats)


def _process_in_worker(chunk, segments=None):
    return _frame(_WORKER(chunk), chunk.index, segments)


def _worker_ready() -> bool:
    return True


def _is_ready(pending) -> bool:
    return isinstance(pending, tuple) or pending.ready()


def _result(pending):
    """The (records, stats) or FramedChunk of a chunk processed here or in a helper process."""
    return pending if isinstance(pending, tuple) else pending.get()


def helper_start_method() -> str:
    """How helper processes start: "fork" while this process has not started TensorFlow's
    runtime, else "spawn".

    A forked helper begins with everything this process imported, TensorFlow included, so it
    takes chunks at once; a spawned one first imports TensorFlow again (seconds of a core: in a
    whole run of create_pretraining_data.py on 2 cores, most of what a helper saves). Forking is
    safe only before the first TensorFlow op of this process creates the eager context with its
    thread pools (a forked copy would hold pools without threads) and where fork is the
    platform's sound choice (Linux). The script forks from its main thread before any op;
    a caller that has already run ops (a test, a notebook) gets spawned helpers.
    """
    if not sys.platform.startswith("linux"):
        return "spawn"
    try:
        from tensorflow.python.eager import context as eager_context

        runtime_started = eager_context.context()._initialized
    except (ImportError, AttributeError):  # a TensorFlow without this attribute: play safe
        return "spawn"
    return "spawn" if runtime_started else "fork"


# Pipe capacity asked for the pool's task and result pipes (Linux caps it at
# /proc/sys/fs/pipe-max-size, 1 MiB by default).
_POOL_PIPE_BYTES = 1 << 20


def widen_pool_pipes(pool) -> int | None:
    """Gives the pipes of a multiprocessing `pool` (tasks in, results out) `_POOL_PIPE_BYTES` of
    capacity where the platform allows it; returns the result pipe's capacity then, else None.

    A chunk's result is ~10 MB of records. This process receives it on the pool's result thread,
    which takes the GIL back after every read of the pipe; at Linux's default 64 KiB that is
    ~170 reads per chunk, each waiting for the GIL while the main thread builds examples, and
    the helper sits blocked in its send meanwhile (py-spy). With 1 MiB, ~10 reads (the A/B is in
    bench/RESULTS.md). The pipes are the pool's private attributes (in every CPython 3 `Pool`;
    read with getattr, so that a Python without them keeps the default): multiprocessing offers
    no way to size them.
    """
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)  # None where fcntl is None too
    if set_size is None:
        return None
    capacity = None
    for queue_name in ("_inqueue", "_outqueue"):
        writer = getattr(getattr(pool, queue_name, None), "_writer", None)
        if writer is None:
            return None
        try:
            capacity = fcntl.fcntl(writer.fileno(), set_size, _POOL_PIPE_BYTES)
        except OSError:  # over the user's pipe-buffer quota or pipe-max-size: keep the default
            return None
    return capacity


def _write_chunks_in_parallel(
    chunks,
    settings,
    num_workers,
    max_chunks_in_flight,
    consume,
    wait_for_helpers=False,
    start_method="spawn",
    segments=None,
) -> int:
    """Processes `chunks` in this process and num_workers - 1 helper processes; calls
    `consume(result)` for every chunk in chunk order, `result` the chunk's (records, stats) or,
    where `segments` is (a segment directory, the number of outputs), its FramedChunk. Returns
    how many chunks the helpers processed.

    Chunks go to the helpers while fewer than two per helper are unfinished; the others are
    processed here, between writes of finished chunks. So this process, which also writes every
    record, takes what the helpers leave, and nothing waits for the helpers to start
    (a spawned helper imports TensorFlow first, which takes seconds): until they are up, every
    chunk is processed here. Which process handled a chunk does not change its result (each
    chunk has its own random stream). `wait_for_helpers` waits for them first instead (tests:
    helpers surely take chunks).

    Helpers start by `start_method` (helper_start_method) before this process builds its
    ChunkProcessor, whose tokenizer runs the first TensorFlow op. The output files are open by
    then but nothing is written to them yet, so a forked helper holds no unwritten record of
    theirs (and a helper never touches them).
    """
    num_helpers = num_workers - 1
    in_flight = max_chunks_in_flight or 4 * num_workers
    context = multiprocessing.get_context(start_method)
    with context.Pool(num_helpers, initializer=_init_worker, initargs=(settings,)) as pool:
        widen_pool_pipes(pool)
        helpers_up = pool.apply_async(_worker_ready)
        processor = ChunkProcessor(settings)  # built while the helpers start up
        if wait_for_helpers:
            helpers_up.wait()
        pending = collections.deque()
        helper_chunks = 0
        for chunk in chunks:
            helper_tasks = sum(not isinstance(p, tuple) and not p.ready() for p in pending)
            if helpers_up.ready() and helper_tasks < 2 * num_helpers:
                pending.append(pool.apply_async(_process_in_worker, (chunk, segments)))
                helper_chunks += 1
            else:
                # Framed here too where the outputs take segments: they take nothing else
                # (Python gets no TFRecord framing but a TFRecordWriter's own file).
                pending.append(_frame(processor(chunk), chunk.index, segments))
            while pending and (len(pending) >= in_flight or _is_ready(pending[0])):
                consume(_result(pending.popleft()))
        while pending:
            consume(_result(pending.popleft()))
    return helper_chunks


# === Main side ===
def check_vocab_for_pretraining(vocab_file: str) -> None:
    vocab = load_vocab(vocab_file)
    missing = [token for token in _REQUIRED_TOKENS if token not in vocab]
    if missing:
        raise ValueError(
            f"vocab file {vocab_file} lacks {missing}; pre-training needs {list(_REQUIRED_TOKENS)}"
        )


# Input megabytes times dupe_factor that make a helper process worth its start-up: importing
# TensorFlow costs a helper ~4 s of a core, in which one process handles ~6 MB at dupe_factor 10
# (measured on 2 cores: 9.3 MB ran as fast with one process as with two, 28 MB 1.3x faster
# with two).
_WORK_PER_HELPER_MB = 100.0


def default_num_workers(total_bytes: int, dupe_factor: int) -> int:
    """All cores for a large corpus; fewer when the helpers' start-up would not pay off."""
    work = total_bytes / 1e6 * dupe_factor
    return max(1, min(os.cpu_count() or 1, 1 + int(work / _WORK_PER_HELPER_MB)))


def statistics_fractions(totals: dict, instances: int) -> dict[str, float]:
    """The summary's shares (fraction_*) from the statistics summed over all work units (the
    dicts `ChunkProcessor.encode` returns) and the number of instances written. Dynamic-masking
    records have no predictions yet: their summary has no prediction shares."""
    predictions = max(totals["predictions"], 1)
    shares = {}
    if "predictions" in totals:
        shares = {
            "fraction_predicted_of_eligible": totals["predictions"]
            / max(totals["eligible_tokens"], 1),
            "fraction_predictions_mask": totals["predictions_mask"] / predictions,
            "fraction_predictions_random": totals["predictions_random"] / predictions,
            "fraction_predictions_unchanged": totals["predictions_unchanged"] / predictions,
            "fraction_at_prediction_cap": totals["at_prediction_cap"] / max(instances, 1),
        }
    return {
        **shares,
        "fraction_random_next": totals["random_next"] / max(instances, 1),
        "fraction_instances_short_target": totals["short_target"] / max(instances, 1),
        # short_seq_prob is drawn once per document and pass, as in the original.
        "fraction_document_passes_short": totals["short_document_passes"]
        / max(totals["document_passes"], 1),
    }


def _summary_path(output_files: list[str]) -> str:
    return summary_path(output_files[0])


def write_pretraining_examples(
    input_files: list[str],
    output_files: list[str],
    settings: PretrainingDataSettings,
    num_workers: int | None = None,
    gzip_compress: bool = False,
    on_decode_error: str = "fail",
    max_chunks_in_flight: int | None = None,
    log_every_seconds: float = 10.0,
    wait_for_helpers: bool = False,
) -> dict:
    """Writes MLM+NSP pre-training TFRecords; returns the summary (also written as JSON next to
    the first output, `.<output name>.summary.json`).

    Each output is written under a temporary name and renamed when all are complete; the summary
    is written last. Both side files start with a dot, so `--input_file=<output>*` reads neither
    (side_file_names). A rerun with the same inputs and settings finds the finished outputs and
    returns at once; an interrupted run leaves no file under a final name and is redone.

    num_workers: processes, this one included (default: all cores for a large corpus, fewer
      for a small one, see `default_num_workers`); the output bytes do not depend on it.
    max_chunks_in_flight: chunks read but not yet written (default 4 per worker), the memory
      bound.
    wait_for_helpers: process nothing here until the helper processes are up (by default this
      process starts alone, as TensorFlow's import makes theirs take seconds).
    """
    settings.validate()
    check_vocab_for_pretraining(settings.vocab_file)
    settings_dict = settings.as_recorded()
    if not settings.preserve_unused_tokens:  # recorded only when on: earlier summaries stay valid
        del settings_dict["preserve_unused_tokens"]
    settings_dict.update(
        gzip_compress=gzip_compress,
        # Outputs written while skipping undecodable lines are not what a run that refuses
        # them would write (it stops at the first).
        on_decode_error=on_decode_error,
        # Size and modification time: an input or vocab edited in place (even to the same size)
        # makes the finished outputs stale.
        inputs=[[path, *file_signature(path)] for path in input_files],
        vocab_file=[settings.vocab_file, *file_signature(settings.vocab_file)],
    )
    # Lists as JSON reads them back (the rerun check compares); edited references are stale.
    settings_dict["word_ref_files"] = [
        [path, *file_signature(path)] for path in settings.word_ref_files
    ]
    # A symbolic link's target takes the records; a device (/dev/null) is written in place,
    # and keeps nothing to reuse: no summary is read or written beside it.
    targets = [output_target(path) for path in output_files]
    in_place = any(target.in_place for target in targets)
    done = None
    if not in_place:
        done = read_completed_summary(_summary_path(output_files), output_files, settings_dict)
    if done is not None:
        logging.info("Outputs already complete (%s); nothing to do", _summary_path(output_files))
        return done

    total_bytes = sum(tf.io.gfile.stat(f).length for f in input_files)
    if num_workers is None:
        num_workers = default_num_workers(total_bytes, settings.dupe_factor)
    counters = text_corpus.CorpusCounters()
    chunks = text_corpus.read_corpus_chunks(
        input_files,
        settings.documents_per_chunk,
        settings.chunk_bytes,
        on_decode_error,
        counters,
        min_documents=MIN_DOCUMENTS_PER_CHUNK if settings.next_sentence else 1,
    )
    if settings.word_ref_files:
        chunks = attach_word_references(chunks, settings.word_ref_files)
    if settings.word_segmenter == "jieba":
        JiebaWordSegmenter()  # builds jieba's dictionary cache once, before any helper starts
    options = tf.io.TFRecordOptions(compression_type="GZIP" if gzip_compress else "")
    temporary = [t.path if t.in_place else temporary_path(t.path) for t in targets]
    for target in targets:
        if target.in_place:
            continue
        directory = os.path.dirname(target.path)
        if directory:
            tf.io.gfile.makedirs(directory)
        # Leftovers of a killed earlier run (never under a final name) are removed, not those
        # of a run still writing the same output (locally, where its process can be asked
        # after); a stale summary goes too, so the outputs count as complete only once this
        # run ends.
        if "://" in target.path:
            for leftover in tf.io.gfile.glob(temporary_glob(target.path)):
                tf.io.gfile.remove(leftover)
        else:
            remove_stale_temporaries(temporary_glob(target.path))
    if not in_place:
        remove_if_exists(_summary_path(output_files))
    # With helper processes and uncompressed outputs, chunks come back framed as segments
    # (record_segments) that are appended to the outputs as plain files. A gzip stream is not a
    # concatenation of its records' frames: compressed outputs take the records one by one.
    framed = num_workers > 1 and not gzip_compress
    if framed:
        writers = [SegmentedOutput(path) for path in temporary]
    else:
        writers = [tf.io.TFRecordWriter(path, options) for path in temporary]
    totals = collections.Counter()
    written = 0
    start = last_log = time.time()

    def consume(result):
        nonlocal written, last_log
        if isinstance(result, FramedChunk):
            append_segments(result.segment_paths, writers, written)
            count, stats = result.num_records, result.stats
        else:
            records, stats = result
            # Record `written + j` goes to writer (written + j) % len(writers): per writer, one
            # strided slice and a bound method (no per-record index arithmetic in Python).
            for index, writer in enumerate(writers):
                write = writer.write
                for record in records[(index - written) % len(writers) :: len(writers)]:
                    write(record)
            count = len(records)
        written += count
        totals.update(stats)
        totals["chunks"] += 1
        now = time.time()
        if now - last_log >= log_every_seconds:
            last_log = now
            elapsed = now - start
            fraction = counters.bytes_read / max(total_bytes, 1)
            eta = elapsed * (1 - fraction) / fraction if fraction > 0 else float("nan")
            logging.info(
                "%d documents (%.0f/s), %d instances written, %.1f%% of %.1f MB read, ETA %.0f s",
                totals["documents"],
                totals["documents"] / elapsed,
                written,
                100 * fraction,
                total_bytes / 1e6,
                eta,
            )

    # The objects made so far (TensorFlow's modules: ~300k) are left out of Python's full
    # collections while the chunks are processed, as in forked helpers (which inherit this):
    # each chunk's instances trigger such collections, and every one would traverse them all
    # again (~0.15 s each, several per process and run). Unfrozen at the end; a caller that
    # froze objects itself keeps its choice.
    freeze_here = gc.get_freeze_count() == 0
    if freeze_here:
        gc.freeze()
    segments = None
    try:
        if framed:
            segments = (new_segment_directory(), len(output_files))
        helper_chunks = 0
        start_method = helper_start_method() if num_workers > 1 else None
        if num_workers <= 1:
            processor = ChunkProcessor(settings)
            for chunk in chunks:
                consume(processor(chunk))
        else:
            helper_chunks = _write_chunks_in_parallel(
                chunks,
                settings,
                num_workers,
                max_chunks_in_flight,
                consume,
                wait_for_helpers,
                start_method,
                segments,
            )
        for writer in writers:
            writer.close()
        if totals["documents"] == 0:
            raise ValueError(
                f"the corpus {input_files} holds no document with any wordpiece; expected one "
                "sentence per line and a blank line between documents"
            )
        if written == 0:
            raise ValueError(f"no instance could be built from {input_files}")
        for path, target in zip(temporary, targets, strict=True):
            if not target.in_place:
                tf.io.gfile.rename(path, target.path, overwrite=True)
    finally:
        if segments is not None:
            remove_segment_directory(segments[0])
        if freeze_here:
            gc.unfreeze()
        for writer in writers:
            writer.close()
        for path, target in zip(temporary, targets, strict=True):
            if not target.in_place and tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)

    elapsed = time.time() - start
    summary = {
        "instances": written,
        "documents": totals["documents"],
        "one_sentence_documents": totals["one_sentence_documents"],
        "sentences": totals["sentences"],
        "tokens": totals["tokens"],
        "input_lines": counters.lines,
        "skipped_undecodable_lines": counters.skipped_lines,
        "files_with_skipped_lines": counters.files_with_skipped_lines,
        "input_megabytes": total_bytes / 1e6,
        **statistics_fractions(totals, written),
        "seconds": elapsed,
        "instances_per_second": written / elapsed,
        "input_megabytes_per_second": total_bytes / 1e6 / elapsed,
        "num_workers": num_workers,
        "chunks": totals["chunks"],
        "chunks_processed_in_helpers": helper_chunks,
        "helper_start_method": start_method,
        "output_files": output_files,
        "settings": settings_dict,
    }
    if not in_place:
        write_summary(_summary_path(output_files), summary)
    if counters.skipped_lines:
        logging.warning(
            "--on_decode_error=skip left out %d of %d input lines that are not UTF-8, in %d of "
            "%d file(s); convert the files (e.g. iconv -f GB18030 -t UTF-8) to keep them",
            counters.skipped_lines,
            counters.lines,
            counters.files_with_skipped_lines,
            len(input_files),
        )
    logging.info(
        "Wrote %d instances to %d file(s) in %.1f s (%.0f instances/s, %.2f MB/s): "
        "%s, %.1f%% random next, %.1f%% short document passes",
        written,
        len(output_files),
        elapsed,
        written / elapsed,
        total_bytes / 1e6 / elapsed,
        (
            f"{100 * summary['fraction_predicted_of_eligible']:.1f}% of eligible tokens predicted"
            if "fraction_predicted_of_eligible" in summary
            else "no masks (dynamic masking: run_pretraining.py draws them)"
        ),
        100 * summary["fraction_random_next"],
        100 * summary["fraction_document_passes_short"],
    )
    return summary
