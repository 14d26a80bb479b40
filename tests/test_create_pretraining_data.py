"""create_pretraining_data.py: the original's output contract, statistics, determinism, safety."""

import gc
import gzip
import json
import logging
import os
import stat
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from official_bert.data.pretraining import data_writer as pretraining_data_writer
from official_bert.data.pretraining.data_writer import (
    PretrainingDataSettings,
    default_num_workers,
    write_pretraining_examples,
)
from official_bert.data.pretraining.features import pretraining_feature_spec
from official_bert.tokenization import load_vocab
from tests.conftest import REPO_ROOT, SHARED
from tests.warm_interpreter import run_script, start_script

CORPUS = REPO_ROOT / "samples" / "pretraining_corpus.txt"

# The parse spec of the original run_pretraining.py input_fn_builder, written out literally.
ORIGINAL_SPEC = {
    "input_ids": tf.io.FixedLenFeature([128], tf.int64),
    "input_mask": tf.io.FixedLenFeature([128], tf.int64),
    "segment_ids": tf.io.FixedLenFeature([128], tf.int64),
    "masked_lm_positions": tf.io.FixedLenFeature([20], tf.int64),
    "masked_lm_ids": tf.io.FixedLenFeature([20], tf.int64),
    "masked_lm_weights": tf.io.FixedLenFeature([20], tf.float32),
    "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
}


@pytest.fixture(scope="module")
def vocab_file(minilm_dir):
    return str(minilm_dir / "vocab.txt")


def _read(path, spec=ORIGINAL_SPEC, compression=""):
    dataset = tf.data.TFRecordDataset(str(path), compression_type=compression)
    return [
        {k: v.numpy() for k, v in tf.io.parse_single_example(record, spec).items()}
        for record in dataset
    ]


def test_output_parses_with_the_original_spec_and_is_well_formed(vocab_file, tmp_path):
    settings = PretrainingDataSettings(vocab_file=vocab_file, dupe_factor=3)
    output = tmp_path / "out.tfrecord"
    summary = write_pretraining_examples([str(CORPUS)], [str(output)], settings, num_workers=1)
    examples = _read(output)
    assert len(examples) == summary["instances"] > 20
    vocab = load_vocab(vocab_file)
    cls, sep, mask = vocab["[CLS]"], vocab["[SEP]"], vocab["[MASK]"]
    for example in examples:
        length = int(example["input_mask"].sum())
        assert example["input_mask"][:length].all() and not example["input_mask"][length:].any()
        ids = example["input_ids"]
        assert ids[0] == cls and ids[length - 1] == sep and (ids[:length] == sep).sum() == 2
        assert not ids[length:].any()
        first_sep = int(np.flatnonzero(ids == sep)[0])
        assert not example["segment_ids"][: first_sep + 1].any()
        assert example["segment_ids"][first_sep + 1 : length].all()
        weights = example["masked_lm_weights"]
        count = int(weights.sum())
        assert count == min(20, max(1, round(length * 0.15)))
        positions = example["masked_lm_positions"][:count]
        assert list(positions) == sorted(set(positions)) and (positions < length).all()
        assert not np.isin(example["masked_lm_ids"][:count], [cls, sep]).any()
        assert example["next_sentence_labels"][0] in (0, 1)
        replaced = ids[positions]
        assert (
            (replaced == mask) | (replaced == example["masked_lm_ids"][:count]) | (replaced >= 0)
        ).all()
    assert summary["settings"]["vocab_file"][0] == vocab_file
    assert json.loads((tmp_path / ".out.tfrecord.summary.json").read_text())["instances"] == len(
        examples
    )


def test_what_the_original_writes_parses_with_our_spec():
    # The original's write_instance_to_example_files builds tf.train.Examples like this.
    def int_feature(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

    features = {
        "input_ids": int_feature([101, 7592, 102, 2088, 102] + [0] * 123),
        "input_mask": int_feature([1] * 5 + [0] * 123),
        "segment_ids": int_feature([0, 0, 0, 1, 1] + [0] * 123),
        "masked_lm_positions": int_feature([1] + [0] * 19),
        "masked_lm_ids": int_feature([7592] + [0] * 19),
        "masked_lm_weights": tf.train.Feature(
            float_list=tf.train.FloatList(value=[1.0] + [0.0] * 19)
        ),
        "next_sentence_labels": int_feature([1]),
    }
    record = tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()
    parsed = tf.io.parse_single_example(record, pretraining_feature_spec(128, 20))
    assert parsed["input_ids"].numpy()[:5].tolist() == [101, 7592, 102, 2088, 102]
    assert parsed["next_sentence_labels"].numpy().tolist() == [1]


def test_statistics_on_real_text(vocab_file, tmp_path):
    corpus = SHARED / "data" / "text" / "wikitext2_valid_test_sentences.txt"
    if not corpus.exists():
        pytest.skip(f"not present: {corpus}")
    settings = PretrainingDataSettings(vocab_file=vocab_file, dupe_factor=3)
    summary = write_pretraining_examples(
        [str(corpus)], [str(tmp_path / "wiki.tfrecord")], settings, num_workers=1
    )
    n = summary["instances"]
    assert n > 15_000
    predictions = summary["fraction_predicted_of_eligible"]
    # round(0.15 * n) predictions out of n - 3 eligible tokens, capped at 20.
    assert 0.145 < predictions < 0.16
    for key, share in (("mask", 0.8), ("random", 0.1), ("unchanged", 0.1)):
        assert abs(summary[f"fraction_predictions_{key}"] - share) < 0.01, key
    # 0.5, plus the chunks of one segment, which always take a random B (as the original).
    assert 0.49 < summary["fraction_random_next"] < 0.57
    assert abs(summary["fraction_document_passes_short"] - 0.1) < 0.06


def _run_script(*flags):
    return run_script(
        [str(REPO_ROOT / "create_pretraining_data.py"), *flags],
        timeout=600,
        cwd=REPO_ROOT,
    )


_DETERMINISM_FLAGS = ["--dupe_factor=2", "--chunk_megabytes=0.001"]


def test_script_is_deterministic_for_any_worker_count(vocab_file, tmp_path):
    flags = [f"--input_file={CORPUS}", f"--vocab_file={vocab_file}", *_DETERMINISM_FLAGS]
    one = _run_script(*flags, f"--output_file={tmp_path / 'a.tfrecord'}", "--num_workers=1")
    two = _run_script(*flags, f"--output_file={tmp_path / 'b.tfrecord'}", "--num_workers=2")
    assert one.returncode == 0, one.stderr[-2000:]
    assert two.returncode == 0, two.stderr[-2000:]
    assert (tmp_path / "a.tfrecord").read_bytes() == (tmp_path / "b.tfrecord").read_bytes()
    # The script runs no TensorFlow op before its helpers start: they are forked (Linux).
    summary = json.loads((tmp_path / ".b.tfrecord.summary.json").read_text())
    assert summary["helper_start_method"] == (
        "fork" if sys.platform.startswith("linux") else "spawn"
    )


def test_default_worker_count_spares_small_corpora_the_helper_start_up(monkeypatch):
    monkeypatch.setattr(pretraining_data_writer.os, "cpu_count", lambda: 8)
    assert default_num_workers(2_000_000, dupe_factor=10) == 1  # the demo corpus scale
    assert default_num_workers(30_000_000, dupe_factor=10) == 4
    assert default_num_workers(30_000_000, dupe_factor=1) == 1
    assert default_num_workers(10**10, dupe_factor=10) == 8  # all cores


_WRITE_WITH_A_FRESH_PROCESS = """
import json, sys
from official_bert.data.pretraining.data_writer import PretrainingDataSettings
from official_bert.data.pretraining.data_writer import write_pretraining_examples
settings = PretrainingDataSettings(vocab_file=sys.argv[1], dupe_factor=2, chunk_bytes=300)
summary = write_pretraining_examples(
    [sys.argv[2]], sys.argv[3:], settings, num_workers=2, wait_for_helpers=True,
    gzip_compress=True,
)
print(json.dumps(summary))
"""


def test_helper_processes_write_the_same_bytes_as_one_process(vocab_file, tmp_path, monkeypatch):
    # The script test above may finish before its helper is up (chunks then stay in the main
    # process); here the main process waits for the helper, so the helper surely takes chunks.
    # Helpers are spawned from this process (it has run TensorFlow ops) and forked from a
    # fresh one (no op before the helpers start, as in the script). The spawned run's chunks
    # come back as segment files (record_segments), removed once appended; the forked run
    # writes gzip outputs, whose records come back through the pool's pipe.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    segment_directories = []
    new_directory = pretraining_data_writer.new_segment_directory
    monkeypatch.setattr(
        pretraining_data_writer,
        "new_segment_directory",
        lambda: segment_directories.append(new_directory()) or segment_directories[-1],
    )
    settings = PretrainingDataSettings(vocab_file=vocab_file, dupe_factor=2, chunk_bytes=300)
    corpus = _repeated_corpus(tmp_path)
    outputs, summaries = {}, {}
    for run in ("one", "spawned", "forked"):
        paths = [str(tmp_path / f"{run}_{shard}.tfrecord") for shard in range(2)]
        if run == "forked":
            result = run_script(
                [
                    "-c",
                    _WRITE_WITH_A_FRESH_PROCESS,
                    vocab_file,
                    str(corpus),
                    *paths,
                ],
                timeout=600,
                cwd=REPO_ROOT,
            )
            assert result.returncode == 0, result.stderr[-2000:]
            summaries[run] = json.loads(result.stdout.splitlines()[-1])
            outputs[run] = [gzip.decompress(Path(path).read_bytes()) for path in paths]
        else:
            summaries[run] = write_pretraining_examples(
                [str(corpus)],
                paths,
                settings,
                num_workers=1 if run == "one" else 2,
                wait_for_helpers=True,
            )
            outputs[run] = [Path(path).read_bytes() for path in paths]
    assert summaries["one"]["helper_start_method"] is None
    assert summaries["spawned"]["helper_start_method"] == "spawn"
    assert summaries["forked"]["helper_start_method"] == (
        "fork" if sys.platform.startswith("linux") else "spawn"
    )
    for run in ("spawned", "forked"):
        assert summaries[run]["chunks"] > 4
        assert summaries[run]["chunks_processed_in_helpers"] > 0
        assert outputs[run] == outputs["one"], run
    assert all(len(shard) > 0 for shard in outputs["one"])
    # The spawned run made its segment directory in the temporary directory and removed it.
    assert len(segment_directories) == 1
    assert Path(segment_directories[0]).parent == scratch
    assert list(scratch.iterdir()) == []


def _repeated_corpus(tmp_path):
    """The sample corpus three times (36 documents): many work units of the fewest documents
    one may hold (MIN_DOCUMENTS_PER_CHUNK) at a small chunk_bytes."""
    corpus = tmp_path / "corpus_x3.txt"
    corpus.write_text(("\n\n".join([CORPUS.read_text().strip()] * 3)) + "\n")
    return corpus


def test_several_outputs_take_the_records_round_robin_across_chunks(vocab_file, tmp_path):
    # Many small chunks, so that chunk boundaries fall anywhere in the rotation over 3 files.
    settings = PretrainingDataSettings(vocab_file=vocab_file, dupe_factor=3, chunk_bytes=300)
    corpus = _repeated_corpus(tmp_path)
    whole = write_pretraining_examples(
        [str(corpus)], [str(tmp_path / "one.tfrecord")], settings, num_workers=1
    )
    paths = [str(tmp_path / f"three_{k}.tfrecord") for k in range(3)]
    write_pretraining_examples([str(corpus)], paths, settings, num_workers=1)
    assert whole["chunks"] > 4 and whole["instances"] % 3 != 0
    records = [r.numpy() for r in tf.data.TFRecordDataset(str(tmp_path / "one.tfrecord"))]
    for k, path in enumerate(paths):
        assert [r.numpy() for r in tf.data.TFRecordDataset(path)] == records[k::3]


def test_pool_pipes_are_widened_where_linux_allows(tmp_path):
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        capacity = pretraining_data_writer.widen_pool_pipes(pool)
        assert pool.apply(sum, ([1, 2, 3],)) == 6  # the pool still works
        if not hasattr(pretraining_data_writer.fcntl, "F_GETPIPE_SZ"):
            assert capacity is None
            return
        import fcntl

        expected = min(1 << 20, int(Path("/proc/sys/fs/pipe-max-size").read_text()))
        for queue in (pool._inqueue, pool._outqueue):
            assert fcntl.fcntl(queue._reader.fileno(), fcntl.F_GETPIPE_SZ) == expected
        assert capacity == expected


def test_objects_are_frozen_for_the_collector_while_writing_and_thawed_after(
    vocab_file, tmp_path, monkeypatch
):
    # Python's full collections would traverse TensorFlow's ~300k objects at every one of
    # them; while chunks are processed they are frozen, and afterwards the process's collector
    # is as it was (unfrozen, or frozen by the caller as the caller left it).
    seen = []
    process = pretraining_data_writer.ChunkProcessor.__call__

    def recording(self, chunk):
        seen.append(gc.get_freeze_count())
        return process(self, chunk)

    monkeypatch.setattr(pretraining_data_writer.ChunkProcessor, "__call__", recording)
    settings = PretrainingDataSettings(vocab_file=vocab_file, dupe_factor=1)
    # A test process that imported _quiet_start (test_quiet_start.py does) is frozen already:
    # start from an unfrozen collector, and leave it as found.
    was_frozen = gc.get_freeze_count() > 0
    gc.unfreeze()
    try:
        write_pretraining_examples([str(CORPUS)], [str(tmp_path / "a.tfrecord")], settings, 1)
        assert seen and min(seen) > 0
        assert gc.get_freeze_count() == 0
        gc.freeze()
        write_pretraining_examples([str(CORPUS)], [str(tmp_path / "b.tfrecord")], settings, 1)
        assert gc.get_freeze_count() > 0  # still the caller's (less what was freed)
    finally:
        gc.unfreeze()
        if was_frozen:
            gc.freeze()


@pytest.mark.slow  # two more script runs; default suite time
def test_script_writes_gzip_shards_with_v2_names_holding_the_same_examples(vocab_file, tmp_path):
    flags = [f"--input_file={CORPUS}", f"--vocab_file={vocab_file}", *_DETERMINISM_FLAGS]
    one = _run_script(*flags, f"--output_file={tmp_path / 'a.tfrecord'}", "--num_workers=1")
    assert one.returncode == 0, one.stderr[-2000:]
    shards = _run_script(
        *flags,
        f"--output_file={tmp_path / 's.tfrecord'}",
        "--num_output_shards=3",
        "--gzip_compress",
        "--use_v2_feature_names",
        "--num_workers=1",
    )
    assert shards.returncode == 0, shards.stderr[-2000:]
    names = sorted(p.name for p in tmp_path.glob("s.tfrecord-*") if not p.name.endswith(".json"))
    assert (tmp_path / ".s.tfrecord-00000-of-00003.summary.json").exists()
    assert names == [f"s.tfrecord-0000{i}-of-00003" for i in range(3)]
    spec = pretraining_feature_spec(128, 20, use_v2_feature_names=True)
    records = [r for name in names for r in _read(tmp_path / name, spec, "GZIP")]
    assert len(records) == len(_read(tmp_path / "a.tfrecord"))
    assert "input_word_ids" in records[0]
    gzip.decompress((tmp_path / names[0]).read_bytes())  # really gzip


def test_whole_word_ngram_and_mlm_only(vocab_file, tmp_path):
    settings = PretrainingDataSettings(
        vocab_file=vocab_file,
        dupe_factor=2,
        do_whole_word_mask=True,
        max_ngram_size=3,
        next_sentence=False,
    )
    write_pretraining_examples(
        [str(CORPUS)], [str(tmp_path / "w.tfrecord")], settings, num_workers=1
    )
    inv = {i: t for t, i in load_vocab(vocab_file).items()}
    for example in _read(tmp_path / "w.tfrecord"):
        assert example["next_sentence_labels"][0] == 0
        assert not example["segment_ids"].any()  # a single segment
        count = int(example["masked_lm_weights"].sum())
        chosen = set(example["masked_lm_positions"][:count].tolist())
        labels = dict(
            zip(
                example["masked_lm_positions"][:count].tolist(),
                example["masked_lm_ids"][:count].tolist(),
                strict=True,
            )
        )
        for position in chosen:
            if inv[labels[position]].startswith("##"):
                assert position - 1 in chosen  # a word is never split


def test_replacement_share_flags(vocab_file, tmp_path):
    """--mask_token_prob/--random_token_prob (--keep_token_prob: what they leave, here 0) reach
    the masking: 1/0/0 makes every prediction [MASK]."""
    output = tmp_path / "all_mask.tfrecord"
    result = _run_script(
        f"--input_file={CORPUS}",
        f"--vocab_file={vocab_file}",
        f"--output_file={output}",
        "--dupe_factor=2",
        "--num_workers=1",
        "--mask_token_prob=1.0",
        "--random_token_prob=0",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    mask = load_vocab(vocab_file)["[MASK]"]
    examples = _read(output)
    predicted = 0
    for example in examples:
        count = int(example["masked_lm_weights"].sum())
        positions = example["masked_lm_positions"][:count]
        assert np.all(example["input_ids"][positions] == mask)
        assert (example["input_ids"] == mask).sum() == count
        predicted += count
    assert predicted > 100
    summary = json.loads((tmp_path / ".all_mask.tfrecord.summary.json").read_text())
    assert summary["fraction_predictions_mask"] == 1.0


def test_bad_input_is_a_clear_error(vocab_file, tmp_path):
    def run(content, **overrides):
        corpus = tmp_path / "corpus.txt"
        corpus.write_bytes(content)
        values = dict(vocab_file=vocab_file, dupe_factor=1)
        values.update(overrides)
        return write_pretraining_examples(
            [str(corpus)],
            [str(tmp_path / "o.tfrecord")],
            PretrainingDataSettings(**values),
            num_workers=1,
        )

    with pytest.raises(
        ValueError,
        match=r"corpus.txt, line 3 \(byte \d+ of the line\): not UTF-8 .*iconv -f GB18030.*--on_decode_error=skip",
    ):
        run(b"good line.\nanother.\nbad \xff byte\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt"]  # nothing half-written
    with pytest.raises(ValueError, match="holds no document"):
        run(b"\n\n   \n")
    with pytest.raises(ValueError, match=r"max_predictions_per_seq must be at least 0, got -1"):
        run(b"a.\n", max_predictions_per_seq=-1)
    with pytest.raises(ValueError, match=r"dupe_factor must be at least 1, got 0"):
        run(b"a.\n", dupe_factor=0)
    with pytest.raises(ValueError, match=r"= 0.9; the shares .* must sum to 1"):
        run(b"a.\n", mask_token_prob=0.8, random_token_prob=0.1, keep_token_prob=0.0)
    bad_vocab = tmp_path / "vocab.txt"
    bad_vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n")
    with pytest.raises(ValueError, match=r"lacks \['\[MASK\]'\]"):
        run(b"hello.\n", vocab_file=str(bad_vocab))


def test_skip_mode_counts_one_sentence_documents_and_rerun_is_a_no_op(vocab_file, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(
        b"first document, one sentence.\n\nsecond \xff bad.\nsecond document.\nmore.\n"
    )
    output = tmp_path / "o.tfrecord"
    settings = PretrainingDataSettings(vocab_file=vocab_file, dupe_factor=2)
    summary = write_pretraining_examples(
        [str(corpus)], [str(output)], settings, num_workers=1, on_decode_error="skip"
    )
    assert summary["skipped_undecodable_lines"] == 1
    assert summary["documents"] == 2 and summary["one_sentence_documents"] == 1
    before = output.stat().st_mtime_ns
    again = write_pretraining_examples(
        [str(corpus)], [str(output)], settings, num_workers=1, on_decode_error="skip"
    )
    assert again["instances"] == summary["instances"] and output.stat().st_mtime_ns == before
    # The same size but new content: the outputs are stale and written again.
    corpus.write_bytes(corpus.read_bytes().replace(b"first", b"FIRST"))
    write_pretraining_examples(
        [str(corpus)], [str(output)], settings, num_workers=1, on_decode_error="skip"
    )
    assert output.stat().st_mtime_ns != before
    # Another vocab under the same name (edited in place, or one in another folder): written
    # again with its ids.
    before = output.stat().st_mtime_ns
    other_folder = tmp_path / "other"
    other_folder.mkdir()
    other_vocab = other_folder / os.path.basename(vocab_file)
    other_vocab.write_text(open(vocab_file, encoding="utf-8").read(), encoding="utf-8")
    settings = PretrainingDataSettings(vocab_file=str(other_vocab), dupe_factor=2)
    write_pretraining_examples(
        [str(corpus)], [str(output)], settings, num_workers=1, on_decode_error="skip"
    )
    assert output.stat().st_mtime_ns != before
    before = output.stat().st_mtime_ns
    with open(other_vocab, "a", encoding="utf-8") as f:
        f.write("zzzextra\n")
    write_pretraining_examples(
        [str(corpus)], [str(output)], settings, num_workers=1, on_decode_error="skip"
    )
    assert output.stat().st_mtime_ns != before


def test_skipped_lines_are_warned_about_and_a_run_that_refuses_them_is_not_a_rerun(
    vocab_file, tmp_path, caplog
):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"good one.\nbad \xff one.\nalso \xfe bad.\n\nsecond document.\n")
    clean = tmp_path / "clean.txt"
    clean.write_bytes(b"clean document.\nits second line.\n")
    output = tmp_path / "o.tfrecord"
    settings = PretrainingDataSettings(vocab_file=vocab_file, dupe_factor=1)
    inputs = [str(corpus), str(clean)]
    with caplog.at_level(logging.WARNING):
        summary = write_pretraining_examples(
            inputs, [str(output)], settings, num_workers=1, on_decode_error="skip"
        )
    assert summary["skipped_undecodable_lines"] == 2
    assert summary["files_with_skipped_lines"] == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        "--on_decode_error=skip left out 2 of 7 input lines that are not UTF-8, in 1 of 2 file(s)"
        in message
        for message in warnings
    ), warnings
    # Without skip the same command must stop at the bad line, not report the skip run's
    # outputs as complete.
    with pytest.raises(ValueError, match=r"corpus.txt, line 2 \(byte \d+ of the line\): not UTF-8"):
        write_pretraining_examples(inputs, [str(output)], settings, num_workers=1)


def test_missing_input_is_a_clear_error(vocab_file, tmp_path):
    result = _run_script(
        f"--input_file={tmp_path / 'nothing*.txt'}",
        f"--vocab_file={vocab_file}",
        f"--output_file={tmp_path / 'o.tfrecord'}",
    )
    assert result.returncode != 0 and "no file matches" in result.stderr


def test_a_killed_run_leaves_no_final_file_and_a_rerun_completes(vocab_file, tmp_path):
    import signal
    import time

    corpus = SHARED / "data" / "text" / "wikitext2_valid_test_sentences.txt"
    if not corpus.exists():
        pytest.skip(f"not present: {corpus}")
    output = tmp_path / "o.tfrecord"
    flags = [
        f"--input_file={corpus}",
        f"--output_file={output}",
        f"--vocab_file={vocab_file}",
        # Enough work (seconds on a fast host) that the kill lands while the outputs are open.
        "--dupe_factor=60",
        "--num_workers=1",
    ]
    process = start_script([str(REPO_ROOT / "create_pretraining_data.py"), *flags], cwd=REPO_ROOT)
    deadline = time.time() + 120
    # Killed as soon as the temporary output exists (it is opened before the first chunk).
    while not list(tmp_path.glob(".o.tfrecord.tmp-*")) and time.time() < deadline:
        time.sleep(0.01)
    process.kill()
    assert process.wait() == -signal.SIGKILL, process.result().stderr[-2000:]
    process.result()
    names = [p.name for p in tmp_path.iterdir()]
    assert "o.tfrecord" not in names and ".o.tfrecord.summary.json" not in names
    assert any(name.startswith(".o.tfrecord.tmp-") for name in names)
    result = _run_script(*flags, "--dupe_factor=1")
    assert result.returncode == 0, result.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".o.tfrecord.summary.json", "o.tfrecord"]
    assert (
        len(_read(output))
        == json.loads((tmp_path / ".o.tfrecord.summary.json").read_text())["instances"]
    )


def _read_fifo_in_background(fifo):
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    return reader, received


def test_outputs_through_a_symbolic_link_and_into_a_fifo(vocab_file, tmp_path):
    """As the original's writes through the path: a linked output's target takes the records
    (the link stays), and a FIFO (or /dev/stdout into a pipe, /dev/null) takes them in place
    instead of being replaced by a regular file."""
    flags = [f"--input_file={CORPUS}", f"--vocab_file={vocab_file}", "--dupe_factor=1"]
    plain = _run_script(*flags, f"--output_file={tmp_path / 'plain.tfrecord'}")
    assert plain.returncode == 0, plain.stderr[-2000:]
    expected = (tmp_path / "plain.tfrecord").read_bytes()

    (tmp_path / "store").mkdir()
    link = tmp_path / "linked.tfrecord"
    link.symlink_to(tmp_path / "store" / "records.tfrecord")
    linked = _run_script(*flags, f"--output_file={link}", "--num_workers=2")
    assert linked.returncode == 0, linked.stderr[-2000:]
    assert link.is_symlink() and link.read_bytes() == expected
    assert os.listdir(tmp_path / "store") == ["records.tfrecord"]

    fifo = tmp_path / "pipe.tfrecord"
    os.mkfifo(fifo)
    reader, received = _read_fifo_in_background(fifo)
    piped = _run_script(*flags, f"--output_file={fifo}")
    reader.join(timeout=60)
    assert piped.returncode == 0, piped.stderr[-2000:]
    assert received == [expected]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert not (tmp_path / ".pipe.tfrecord.summary.json").exists()


def test_preserve_unused_tokens_flag_keeps_unused_tokens_whole(vocab_file, tmp_path):
    # The original's --preserve_unused_tokens (bert-tensorflow 1.0.4): "[unused1]" written as a
    # word is one token of the vocab; without it, "[", "unused", "##1", "]".
    corpus = tmp_path / "corpus.txt"
    sentences = "".join(f"the [unused1] and [unused2] of line {n}.\n" for n in range(12))
    corpus.write_text(sentences + "\n" + sentences, encoding="utf-8")
    vocab = load_vocab(vocab_file)
    unused_ids = {vocab["[unused1]"], vocab["[unused2]"]}
    output = tmp_path / "o.tfrecord"
    flags = [f"--input_file={corpus}", f"--vocab_file={vocab_file}", f"--output_file={output}"]
    plain = _run_script(*flags, "--dupe_factor=1")
    assert plain.returncode == 0, plain.stderr[-2000:]
    plain_ids = {int(i) for example in _read(output) for i in example["input_ids"]}
    assert not plain_ids & unused_ids
    # The same output and inputs with the flag: the setting is part of the reuse check.
    preserved = _run_script(*flags, "--dupe_factor=1", "--preserve_unused_tokens=true")
    assert preserved.returncode == 0, preserved.stderr[-2000:]
    preserved_ids = {int(i) for example in _read(output) for i in example["input_ids"]}
    assert preserved_ids >= unused_ids
    summary = json.loads((tmp_path / ".o.tfrecord.summary.json").read_text())
    assert summary["settings"]["preserve_unused_tokens"] is True


def test_random_next_sentences_come_from_another_document_when_documents_are_large(
    vocab_file, tmp_path
):
    """A document larger than a work unit (a book over --chunk_megabytes) made a unit of its
    own, whose random B could only come from itself: labelled "random", it was A's own text."""
    # Five books, each marked by a word of its own: four fill a unit, the fifth (alone at the
    # end) joins it.
    words = ("cat", "sea", "sky", "tree", "road")
    books = [
        "\n".join(f"a long story of the {word} , part {n} ." for n in range(120)) for word in words
    ]
    corpus = tmp_path / "books.txt"
    corpus.write_text("\n\n".join(books) + "\n")
    settings = PretrainingDataSettings(
        vocab_file=vocab_file, dupe_factor=2, max_seq_length=64, chunk_bytes=2000
    )
    output = tmp_path / "out.tfrecord"
    write_pretraining_examples([str(corpus)], [str(output)], settings, num_workers=1)
    vocab = load_vocab(vocab_file)
    marks = {vocab[word] for word in words}
    spec = pretraining_feature_spec(64, 20)
    random_next = 0
    for example in _read(output, spec):
        ids, segments = example["input_ids"], example["segment_ids"]
        length = int(example["input_mask"].sum())
        # Masked positions hold [MASK] or another word: read the original ids back.
        count = int(example["masked_lm_weights"].sum())
        ids = ids.copy()
        ids[example["masked_lm_positions"][:count]] = example["masked_lm_ids"][:count]
        a = {int(i) for i in ids[:length][segments[:length] == 0]} & marks
        b = {int(i) for i in ids[:length][segments[:length] == 1]} & marks
        if example["next_sentence_labels"][0] == 1 and a and b:
            random_next += 1
            assert a != b, "a random next sentence from A's own document"
    assert random_next > 20


def test_another_runs_temporary_output_is_left_alone(vocab_file, tmp_path):
    """Two runs writing one --output_file: each removed every `.NAME.tmp-*` as a killed run's
    leftover, the other's open file too, which then failed to rename (a traceback)."""
    import subprocess

    output = tmp_path / "o.tfrecord"
    other = subprocess.Popen(["sleep", "60"])  # stands for the other run's process
    try:
        theirs = tmp_path / f".o.tfrecord.tmp-{other.pid}"
        theirs.write_bytes(b"half written")
        dead = tmp_path / ".o.tfrecord.tmp-999999999"  # no such process: a killed run's
        dead.write_bytes(b"left over")
        settings = PretrainingDataSettings(vocab_file=vocab_file, dupe_factor=1)
        write_pretraining_examples([str(CORPUS)], [str(output)], settings, num_workers=1)
        assert theirs.exists() and not dead.exists()
        assert len(_read(output)) > 0
    finally:
        other.kill()
        other.wait()
