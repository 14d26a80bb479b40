"""write_pretraining_examples_with_beam: create_pretraining_data as an Apache Beam pipeline.

The same generation as the local writer (data_writer.py), on any Beam runner (DirectRunner here;
Dataflow, Flink, Spark where users have them), for corpora beyond one machine. docs/beam.md says
how to run it.

  input files -> documents, keyed (file index, document index)        one file per work item
              -> pools: a document goes to pool hash(seed, identity) % P  GroupByKey
              -> per pool: tokenize, instances (each document from its own random stream),
                 shuffle, mask, encode                                   ChunkProcessor, reused
              -> records keyed (shard, (pool, position))               GroupByKey per shard
              -> shards <prefix>-SSSSS-of-NNNNN, sorted by (pool, position), written atomically
              -> the summary, `.<name>.summary.json` beside the shards   after every shard

Why pools: a random "next" segment B comes from another document of the same pool, as the local
writer draws it from another document of the same chunk. A pool holds about --chunk_megabytes of
text drawn uniformly from the whole corpus (the hash knows neither content nor position), so a
pool is a random sample of documents; the original drew B from the whole corpus, and a uniform
sample has the same document distribution (the local writer's chunks, neighbouring documents of
one file, are further from that).

Determinism: a document's pool and instance-building stream derive from (random_seed, input file
index, document index in its file); a pool's shuffle and masking stream from (random_seed, pool);
every grouping is sorted before use. So the bytes depend on the inputs and flags only, not on the
runner, its workers or how it splits the work.

What differs from the local writer: the bytes (pools are not its chunks, and each document has
its own stream), not the statistics: on wikitext-2 at dupe_factor 10 the instance counts agree
within about 1% and the shares within their spread across seeds (bench/RESULTS.md).
"""

from __future__ import annotations

import collections
import json
import math
import os
import random
import shlex
import typing

import apache_beam as beam
import numpy as np
import tensorflow as tf
from absl import logging
from apache_beam.options.pipeline_options import PipelineOptions

from official_bert.data.completed_outputs import remove_if_exists, write_summary
from official_bert.data.pretraining.data_writer import (
    ChunkProcessor,
    PretrainingDataSettings,
    check_vocab_for_pretraining,
    statistics_fractions,
)
from official_bert.data.pretraining.instances import create_instances_from_document
from official_bert.data.text_corpus import CorpusCounters, read_file_documents
from official_bert.side_file_names import summary_path as side_file_summary_path

_STATISTICS = "statistics"  # the tag of the side output of statistics dicts


def shard_paths(output_prefix: str, num_shards: int) -> list[str]:
    """`<prefix>-SSSSS-of-NNNNN` for every shard (the names of the local writer's
    --num_output_shards)."""
    return [f"{output_prefix}-{i:05d}-of-{num_shards:05d}" for i in range(num_shards)]


def _side_name(output_prefix: str, suffix: str) -> str:
    """`<folder>/.<name><suffix>` for output_prefix `<folder>/<name>`: beside the shards, named
    as every writer names its side files (official_bert/side_file_names.py), so no glob
    `<prefix>*` matches it."""
    folder, name = os.path.split(output_prefix)
    if not name.strip("."):
        raise ValueError(
            f"--output_file={output_prefix!r}: the Beam writer needs a file name prefix that is "
            "not empty nor only dots (it names the shards <prefix>-SSSSS-of-NNNNN)"
        )
    return os.path.join(folder, f".{name}{suffix}")


def summary_path(output_prefix: str) -> str:
    """Where the statistics summary of `output_prefix`'s shards goes: the summary path of
    side_file_names, `<folder>/.<name>.summary.json`, which no reader's glob of the shards
    (`<prefix>*`, `<prefix>-*`) matches."""
    _side_name(output_prefix, "")  # the prefix's checks
    return side_file_summary_path(output_prefix)


def _temporary_folder(output_prefix: str) -> str:
    return _side_name(output_prefix, ".beam-temp")


# The first word of a stream's spawn key: a document's streams and a pool's never coincide (an
# entropy list alone would not do: numpy pads it with zeros, so [s, 3, 0] and [s, 3, 0, 0] agree).
_DOCUMENT_STREAM, _POOL_STREAM = 0, 1


def _seed_sequence(random_seed: int, *spawn_key: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(random_seed, spawn_key=spawn_key)


def _document_streams(random_seed: int, identity: tuple[int, int], num_pools: int):
    """(the document's pool, its random.Random for building instances), both from
    (random_seed, file index, document index)."""
    state = _seed_sequence(random_seed, _DOCUMENT_STREAM, *identity).generate_state(2, np.uint64)
    return int(state[1] % np.uint64(num_pools)), random.Random(int(state[0]))


# === Reading ===
# Beam infers a union with TaggedOutput from `process`; the main output is what counts.
@beam.typehints.with_output_types(typing.Any)
class _ReadDocuments(beam.DoFn):
    """(file index, path) -> ((file index, document index), [sentence, ...]) per document, and
    the file's line counters on the statistics output."""

    def __init__(self, on_decode_error: str):
        self.on_decode_error = on_decode_error

    def process(self, indexed_path):
        file_index, path = indexed_path
        counters = CorpusCounters()
        for document_index, document in enumerate(
            read_file_documents(path, self.on_decode_error, counters)
        ):
            yield (file_index, document_index), document.sentences
        yield beam.pvalue.TaggedOutput(
            _STATISTICS,
            {"input_lines": counters.lines, "skipped_undecodable_lines": counters.skipped_lines},
        )


class _AssignPool(beam.DoFn):
    def __init__(self, random_seed: int, num_pools: int):
        self.random_seed = random_seed
        self.num_pools = num_pools

    def process(self, document):
        identity, sentences = document
        pool, _ = _document_streams(self.random_seed, identity, self.num_pools)
        yield pool, (identity, sentences)


# === Building examples ===
# Beam infers a union with TaggedOutput from `process`; the main output is what counts.
@beam.typehints.with_output_types(typing.Any)
class _BuildPoolExamples(beam.DoFn):
    """(pool, [(identity, sentences), ...]) -> (shard, ((pool, position), tf.train.Example
    bytes)) per instance, and the pool's statistics on the statistics output."""

    def __init__(self, settings: PretrainingDataSettings, num_pools: int, num_shards: int):
        self.settings = settings
        self.num_pools = num_pools
        self.num_shards = num_shards

    def setup(self):
        self.processor = ChunkProcessor(self.settings)

    def process(self, pool_documents):
        pool, documents = pool_documents
        settings = self.settings
        documents = sorted(documents)  # identity order, whatever order the runner delivered
        tokenized = self.processor.tokenize([sentences for _, sentences in documents])
        kept = [
            (identity, document)
            for (identity, _), document in zip(documents, tokenized, strict=True)
            if document is not None
        ]
        pool_documents = [document for _, document in kept]
        instances = []
        short_passes = 0
        for document_index, (identity, _) in enumerate(kept):
            _, rng = _document_streams(settings.random_seed, identity, self.num_pools)
            for _ in range(settings.dupe_factor):
                document_instances = create_instances_from_document(
                    pool_documents,
                    document_index,
                    settings.max_seq_length,
                    settings.short_seq_prob,
                    rng,
                    next_sentence=settings.next_sentence,
                )
                short_passes += document_instances[0].is_short_target
                instances.extend(document_instances)
        seeds = _seed_sequence(settings.random_seed, _POOL_STREAM, pool)
        random.Random(int(seeds.generate_state(1, np.uint64)[0])).shuffle(instances)
        records, statistics = self.processor.encode(
            instances, pool_documents, short_passes, np.random.default_rng(seeds)
        )
        # Round-robin over the shards, starting at a pool's own offset: shards of equal size.
        for position, record in enumerate(records):
            yield (pool + position) % self.num_shards, ((pool, position), record)
        yield beam.pvalue.TaggedOutput(_STATISTICS, statistics)


# === Writing ===
class _WriteShard(beam.DoFn):
    """(shard, [((pool, position), record) or None, ...]) -> (path, records written): the
    records in (pool, position) order, written under a temporary name, then renamed (a retried
    or repeated write gives the same bytes)."""

    def __init__(self, output_prefix: str, num_shards: int, gzip_compress: bool):
        self.output_prefix = output_prefix
        self.num_shards = num_shards
        self.gzip_compress = gzip_compress

    def process(self, shard_records):
        shard, records = shard_records
        records = sorted(record for record in records if record is not None)
        path = shard_paths(self.output_prefix, self.num_shards)[shard]
        temporary = os.path.join(
            _temporary_folder(self.output_prefix), f"{os.path.basename(path)}-{os.getpid()}"
        )
        options = tf.io.TFRecordOptions(compression_type="GZIP" if self.gzip_compress else "")
        with tf.io.TFRecordWriter(temporary, options) as writer:
            for _, record in records:
                writer.write(record)
        tf.io.gfile.rename(temporary, path, overwrite=True)
        yield path, len(records)


def _sum_statistics(dicts) -> dict:
    totals = collections.Counter()
    for statistics in dicts:
        totals.update(statistics)
    return dict(totals)


class _WriteSummary(beam.DoFn):
    """The summed statistics -> the summary JSON, once every shard is written (side input)."""

    def __init__(self, output_prefix: str, input_files: list[str], summary_fields: dict):
        self.output_prefix = output_prefix
        self.input_files = input_files
        self.summary_fields = summary_fields

    def process(self, totals, written_shards):
        totals = collections.Counter(totals)
        instances = sum(count for _, count in written_shards)
        if totals["documents"] == 0:
            raise ValueError(
                f"the corpus {self.input_files} holds no document with any wordpiece; expected "
                "one sentence per line and a blank line between documents"
            )
        if instances == 0:
            raise ValueError(f"no instance could be built from {self.input_files}")
        summary = {
            "instances": instances,
            "documents": totals["documents"],
            "one_sentence_documents": totals["one_sentence_documents"],
            "sentences": totals["sentences"],
            "tokens": totals["tokens"],
            "input_lines": totals["input_lines"],
            "skipped_undecodable_lines": totals["skipped_undecodable_lines"],
            **statistics_fractions(totals, instances),
            **self.summary_fields,
        }
        write_summary(summary_path(self.output_prefix), summary)
        yield summary


# === The pipeline ===
def write_pretraining_examples_with_beam(
    input_files: list[str],
    output_prefix: str,
    num_shards: int,
    settings: PretrainingDataSettings,
    pipeline_options: str = "",
    gzip_compress: bool = False,
    on_decode_error: str = "fail",
) -> dict:
    """Writes MLM+NSP pre-training TFRecords `<output_prefix>-SSSSS-of-NNNNN` (num_shards of
    them) with a Beam pipeline; returns the summary, also written to `summary_path(prefix)`.

    pipeline_options: Beam's command-line options as one string, e.g. "--runner=DirectRunner
      --direct_num_workers=2 --direct_running_mode=multi_processing" (see docs/beam.md).
    Pools hold about settings.chunk_bytes of text (settings.documents_per_chunk plays no part:
    the number of documents is not known before reading). The files and the vocab must be
    readable where the workers run (a bucket path on a cluster).
    """
    settings.validate()
    if settings.word_segmenter == "ref_file":
        # Reference lines pair with corpus lines by order; the pipeline reads documents by
        # (file, document) key and would need the references keyed the same way.
        raise ValueError(
            "--word_segmenter=ref_file is not supported with --beam_pipeline_options; use the "
            "local writer, or --word_segmenter=jieba"
        )
    check_vocab_for_pretraining(settings.vocab_file)
    if "," in output_prefix:
        raise ValueError(
            f"--output_file={output_prefix!r}: the Beam writer takes one name, the prefix of its "
            "shards (their number is --num_output_shards), not a comma-separated list"
        )
    if num_shards < 1:
        raise ValueError(f"--num_output_shards must be at least 1, got {num_shards}")
    if on_decode_error not in ("fail", "skip"):
        raise ValueError(f"on_decode_error must be 'fail' or 'skip', got {on_decode_error!r}")
    total_bytes = sum(tf.io.gfile.stat(path).length for path in input_files)
    num_pools = max(1, math.ceil(total_bytes / settings.chunk_bytes))
    paths = shard_paths(output_prefix, num_shards)
    settings_dict = settings.as_recorded()
    settings_dict.update(
        vocab_file=os.path.basename(settings.vocab_file),
        gzip_compress=gzip_compress,
        word_ref_files=list(settings.word_ref_files),
    )
    summary_fields = {
        "input_megabytes": total_bytes / 1e6,
        "pools": num_pools,
        "output_files": paths,
        "settings": settings_dict,
        "writer": "beam",
    }

    # No summary until this run is complete; shards of another run under the same prefix (another
    # shard count) would mix into a reader's `<prefix>*`, so they go too.
    remove_if_exists(summary_path(output_prefix))
    folder = os.path.dirname(output_prefix)
    if folder:
        tf.io.gfile.makedirs(folder)
    stale = set(tf.io.gfile.glob(f"{output_prefix}-[0-9]*-of-[0-9]*")) - set(paths)
    for path in sorted(stale):
        logging.info("Removing a shard of an earlier run: %s", path)
        tf.io.gfile.remove(path)
    temporary_folder = _temporary_folder(output_prefix)
    tf.io.gfile.makedirs(temporary_folder)

    options = PipelineOptions(shlex.split(pipeline_options))
    with beam.Pipeline(options=options) as pipeline:
        read = (
            pipeline
            | "Files" >> beam.Create(list(enumerate(input_files)))
            | "SpreadFiles" >> beam.Reshuffle()
            | "ReadDocuments"
            >> beam.ParDo(_ReadDocuments(on_decode_error)).with_outputs(
                _STATISTICS, main="documents"
            )
        )
        built = (
            read.documents
            | "AssignPool" >> beam.ParDo(_AssignPool(settings.random_seed, num_pools))
            | "GroupPools" >> beam.GroupByKey()
            | "BuildExamples"
            >> beam.ParDo(_BuildPoolExamples(settings, num_pools, num_shards)).with_outputs(
                _STATISTICS, main="records"
            )
        )
        # Every shard is written, even one that no record reaches (a None marks it).
        every_shard = pipeline | "EveryShard" >> beam.Create([(i, None) for i in range(num_shards)])
        written = (
            (built.records, every_shard)
            | "WithEveryShard" >> beam.Flatten()
            | "GroupShards" >> beam.GroupByKey()
            | "WriteShards" >> beam.ParDo(_WriteShard(output_prefix, num_shards, gzip_compress))
        )
        _ = (
            (read[_STATISTICS], built[_STATISTICS])
            | "AllStatistics" >> beam.Flatten()
            | "SumStatistics" >> beam.CombineGlobally(_sum_statistics)
            | "WriteSummary"
            >> beam.ParDo(
                _WriteSummary(output_prefix, input_files, summary_fields),
                beam.pvalue.AsList(written),
            )
        )
    tf.io.gfile.rmtree(temporary_folder)
    with tf.io.gfile.GFile(summary_path(output_prefix)) as reader:
        return json.load(reader)
