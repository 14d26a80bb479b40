"""create_pretraining_data as a Beam pipeline (official_bert/data/pretraining/beam_pipeline.py):
the original's feature spec, shards and summary names, determinism across runners' splits, the
local writer's statistics, and run_pretraining.py training from the shards.

Marked `beam`; skipped, saying so, only where apache_beam is not installed at all (an install
that is there but broken fails here instead of hiding behind a skip).
"""

import glob
import gzip
import importlib.util
import json

import numpy as np
import pytest
import tensorflow as tf

from official_bert.config import BertConfig
from official_bert.data.pretraining.data_writer import (
    PretrainingDataSettings,
    write_pretraining_examples,
)
from official_bert.data.pretraining.features import pretraining_feature_spec
from official_bert.tokenization import load_vocab
from tests.conftest import REPO_ROOT, SHARED
from tests.warm_interpreter import run_script

pytestmark = [
    pytest.mark.beam,
    pytest.mark.skipif(
        importlib.util.find_spec("apache_beam") is None,
        reason='apache-beam is not installed: pip install -e ".[beam]" (docs/beam.md)',
    ),
]

CORPUS = REPO_ROOT / "samples" / "pretraining_corpus.txt"
WIKITEXT = SHARED / "data" / "text" / "wikitext2_valid_test_sentences.txt"
IN_PROCESS = "--runner=DirectRunner"
TWO_PROCESSES = (
    "--runner=DirectRunner --direct_num_workers=2 --direct_running_mode=multi_processing"
)


@pytest.fixture(scope="module")
def vocab_file(minilm_dir):
    return str(minilm_dir / "vocab.txt")


def _write_with_beam(inputs, prefix, settings, num_shards=3, options=IN_PROCESS, **kwargs):
    from official_bert.data.pretraining.beam_pipeline import write_pretraining_examples_with_beam

    return write_pretraining_examples_with_beam(
        [str(path) for path in inputs], str(prefix), num_shards, settings, options, **kwargs
    )


def _records(pattern, compression=""):
    paths = sorted(glob.glob(str(pattern)))
    return [r.numpy() for r in tf.data.TFRecordDataset(paths, compression_type=compression)]


def _parse(records, settings):
    spec = pretraining_feature_spec(settings.max_seq_length, settings.max_predictions_per_seq)
    return [
        {k: v.numpy() for k, v in tf.io.parse_single_example(record, spec).items()}
        for record in records
    ]


def test_shards_parse_with_the_original_spec_and_the_summary_stays_out_of_their_glob(
    vocab_file, tmp_path
):
    # Two files, one gzip-compressed: the documents of both, pooled across the files.
    text = CORPUS.read_bytes()
    (tmp_path / "part-1.txt.gz").write_bytes(gzip.compress(text))
    settings = PretrainingDataSettings(vocab_file=vocab_file, dupe_factor=2, chunk_bytes=1500)
    prefix = tmp_path / "out" / "examples"
    summary = _write_with_beam([CORPUS, tmp_path / "part-1.txt.gz"], prefix, settings)

    shards = [f"{prefix}-{i:05d}-of-00003" for i in range(3)]
    for pattern in (f"{prefix}*", f"{prefix}-*"):  # what readers pass as --input_file
        assert sorted(glob.glob(pattern)) == shards
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        ".examples.summary.json",
        *[f"examples-{i:05d}-of-00003" for i in range(3)],
    ]
    written = json.loads((tmp_path / "out" / ".examples.summary.json").read_text())
    assert written == summary and summary["output_files"] == shards

    examples = _parse(_records(f"{prefix}*"), settings)
    assert len(examples) == summary["instances"] > 40
    assert summary["documents"] == 2 * 12  # samples/pretraining_corpus.txt holds 12 documents
    # Pools of about chunk_bytes of the input files as stored (the .gz one compressed).
    stored = CORPUS.stat().st_size + (tmp_path / "part-1.txt.gz").stat().st_size
    assert summary["pools"] == -(-stored // 1500) > 1
    vocab = load_vocab(vocab_file)
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    for example in examples:
        length = int(example["input_mask"].sum())
        ids = example["input_ids"]
        assert ids[0] == cls and ids[length - 1] == sep and (ids[:length] == sep).sum() == 2
        assert not ids[length:].any()
        count = int(example["masked_lm_weights"].sum())
        assert count == min(20, max(1, round(length * 0.15)))
        positions = example["masked_lm_positions"][:count]
        assert list(positions) == sorted(set(positions)) and (positions < length).all()
        assert not np.isin(example["masked_lm_ids"][:count], [cls, sep]).any()
    labels = [int(e["next_sentence_labels"][0]) for e in examples]
    assert sum(labels) == round(summary["fraction_random_next"] * len(examples))
    assert 0 < sum(labels) < len(examples)
    # Round-robin from each pool's own offset: shards within a pool's worth of each other.
    sizes = [len(_records(shard)) for shard in shards]
    assert max(sizes) - min(sizes) <= summary["pools"]


def test_whole_word_and_ngram_masking_reach_the_beam_path(vocab_file, tmp_path):
    settings = PretrainingDataSettings(
        vocab_file=vocab_file, dupe_factor=2, do_whole_word_mask=True, max_ngram_size=3
    )
    prefix = tmp_path / "wwm"
    _write_with_beam([CORPUS], prefix, settings, num_shards=1, gzip_compress=True)
    gzip.decompress((tmp_path / "wwm-00000-of-00001").read_bytes())  # really gzip
    inverse = {index: token for token, index in load_vocab(vocab_file).items()}
    continuations = 0
    for example in _parse(_records(f"{prefix}*", "GZIP"), settings):
        count = int(example["masked_lm_weights"].sum())
        positions = example["masked_lm_positions"][:count].tolist()
        labels = dict(zip(positions, example["masked_lm_ids"][:count].tolist(), strict=True))
        for position in positions:
            if inverse[labels[position]].startswith("##"):
                continuations += 1
                assert position - 1 in labels  # a word is never split
    assert continuations > 0  # the check above had something to check


def test_script_output_does_not_depend_on_the_workers(vocab_file, tmp_path):
    """create_pretraining_data.py --beam_pipeline_options with two worker threads writes the
    bytes of one in-process worker (each document's stream and pool come from its identity;
    each shard is sorted before it is written). Two worker processes: the slow test below."""
    settings = PretrainingDataSettings(
        vocab_file=vocab_file, dupe_factor=2, chunk_bytes=int(0.001 * 1024 * 1024)
    )
    _write_with_beam([CORPUS], tmp_path / "one" / "examples", settings, num_shards=2)
    result = run_script(
        [
            str(REPO_ROOT / "create_pretraining_data.py"),
            f"--input_file={CORPUS}",
            f"--output_file={tmp_path / 'two' / 'examples'}",
            f"--vocab_file={vocab_file}",
            "--dupe_factor=2",
            "--num_output_shards=2",
            "--chunk_megabytes=0.001",
            "--beam_pipeline_options=--runner=DirectRunner --direct_num_workers=2 "
            "--direct_running_mode=multi_threading",
        ],
        timeout=600,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((tmp_path / "two" / ".examples.summary.json").read_text())
    assert summary["pools"] == 3  # ceil(2523 bytes / 1048): work for both threads
    outputs = {
        name: [(tmp_path / name / f"examples-{i:05d}-of-00002").read_bytes() for i in range(2)]
        for name in ("one", "two")
    }
    assert outputs["one"] == outputs["two"]
    assert all(outputs["one"])


def test_run_pretraining_trains_from_the_beam_shards(vocab_file, tmp_path):
    settings = PretrainingDataSettings(
        vocab_file=vocab_file, dupe_factor=2, max_seq_length=32, max_predictions_per_seq=5
    )
    prefix = tmp_path / "data" / "examples"
    _write_with_beam([CORPUS], prefix, settings, num_shards=2)
    config = tmp_path / "bert_config.json"
    BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
    ).to_json_file(str(config))
    result = run_script(
        [
            str(REPO_ROOT / "run_pretraining.py"),
            f"--input_file={prefix}*",
            f"--output_dir={tmp_path / 'run'}",
            f"--bert_config_file={config}",
            "--max_seq_length=32",
            "--max_predictions_per_seq=5",
            "--train_batch_size=8",
            "--eval_batch_size=8",
            "--do_train",
            "--do_eval",
            "--num_train_steps=3",
            "--num_warmup_steps=1",
            "--max_eval_steps=2",
        ],
        timeout=600,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    results = (tmp_path / "run" / "eval_results.txt").read_text()
    assert "global_step = 3" in results, results
    values = dict(line.split(" = ") for line in results.splitlines())
    # A barely trained model: about ln(30522) = 10.3 and ln(2) = 0.69 (real batches were read).
    assert 9 < float(values["masked_lm_loss"]) < 11.5
    assert 0.6 < float(values["next_sentence_loss"]) < 0.8


def test_bad_output_names_are_clear_errors(vocab_file, tmp_path):
    settings = PretrainingDataSettings(vocab_file=vocab_file, dupe_factor=1)
    with pytest.raises(ValueError, match="not a comma-separated list"):
        _write_with_beam([CORPUS], f"{tmp_path}/a,{tmp_path}/b", settings)
    with pytest.raises(ValueError, match="only dots"):
        _write_with_beam([CORPUS], tmp_path / "..", settings)


@pytest.mark.slow  # wikitext-2 twice with Beam (once on 2 processes) and once locally
def test_wikitext_matches_the_local_writer_and_reruns_are_byte_identical(vocab_file, tmp_path):
    """The acceptance of issue 29: the Beam output's instance count within 5% of the local
    writer's and its statistics within 1.5 points; a rerun with other workers, the same bytes.

    dupe_factor 10 (the original's recommendation): wikitext-2 valid+test holds only 122
    articles, and the short-target draw is one per (article, pass), so at dupe_factor 2 the
    short-target shares of any two random streams differ by several points (seen: 16% against
    7% of instances). At dupe_factor 10 that share still spreads over ~2.7 points across seeds,
    for the local writer as for Beam (bench/RESULTS.md); at the default seed they agree within
    1.1 points."""
    if not WIKITEXT.exists():
        pytest.skip(f"not present: {WIKITEXT}")
    settings = PretrainingDataSettings(vocab_file=vocab_file, dupe_factor=10)
    local = write_pretraining_examples(
        [str(WIKITEXT)], [str(tmp_path / "local.tfrecord")], settings, num_workers=1
    )
    beam = _write_with_beam([WIKITEXT], tmp_path / "a" / "wiki", settings, num_shards=4)
    again = _write_with_beam(
        [WIKITEXT], tmp_path / "b" / "wiki", settings, num_shards=4, options=TWO_PROCESSES
    )
    for shard in range(4):
        name = f"wiki-{shard:05d}-of-00004"
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert again["instances"] == beam["instances"]
    assert abs(beam["instances"] / local["instances"] - 1) < 0.05
    for key in (
        "fraction_predicted_of_eligible",
        "fraction_predictions_mask",
        "fraction_predictions_random",
        "fraction_predictions_unchanged",
        "fraction_random_next",
        "fraction_instances_short_target",
        "fraction_document_passes_short",
    ):
        assert abs(beam[key] - local[key]) < 0.015, (key, beam[key], local[key])
    examples = _parse(_records(tmp_path / "a" / "wiki*"), settings)
    assert len(examples) == beam["instances"]
