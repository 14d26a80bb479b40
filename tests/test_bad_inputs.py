"""Bad inputs and faults a realistic user meets (issue 25), end to end on tiny data: files beside
an output that its glob would read, killed writers' temporaries, cut-short or damaged records and
checkpoints, ids beyond the vocabulary, a diverging run, the original's TPU flags. Each case
failed (or passed silently wrong) before the checks in the shared readers, loaders and runner.
"""

import ast
import re
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import flags
from absl import logging as absl_logging

from official_bert.atomic_output import atomic_output
from official_bert.checkpoints import load_bert_weights
from official_bert.checkpoints.conversion import convert_checkpoint
from official_bert.checkpoints.damaged_checkpoint import DamagedCheckpointError
from official_bert.config import BertConfig
from official_bert.data.pretraining.data_writer import (
    PretrainingDataSettings,
    write_pretraining_examples,
)
from official_bert.data.pretraining.dataset import pretraining_dataset
from official_bert.data.record_batches import batched_records
from official_bert.data.record_files import RecordFileError, records_named_on_error
from official_bert.data.text_corpus import expand_input_patterns
from official_bert.models import BertEncoder, BertPretrainer
from official_bert.option_flags import define_option_flags, options_from_flags
from official_bert.script_main import input_check_message
from official_bert.tasks.pretraining import PretrainingOptions, run_pretraining
from official_bert.training import distribution
from official_bert.training.runner import Runner
from official_bert.training.training_options import TrainingOptions
from tests.conftest import ORIGINAL_TINY, REPO_ROOT, SHARED
from tests.tiny_data import write_tiny_task
from tests.warm_interpreter import run_script

SEQ, PREDICTIONS = 32, 5


@pytest.fixture(scope="module")
def records(tmp_path_factory, original_tiny_dir):
    """Pre-training records of the original's sample text (vocab of orig_tiny_v1000), written
    as create_pretraining_data.py writes them: out.tfrecord and its summary beside it."""
    corpus = SHARED / "data" / "text" / "bert_sample_text.txt"
    if not corpus.exists():
        pytest.skip(f"not present: {corpus}")
    directory = tmp_path_factory.mktemp("records")
    output = directory / "out.tfrecord"
    write_pretraining_examples(
        [str(corpus)],
        [str(output)],
        PretrainingDataSettings(
            vocab_file=str(original_tiny_dir / "vocab.txt"),
            max_seq_length=SEQ,
            max_predictions_per_seq=PREDICTIONS,
            dupe_factor=2,
        ),
        num_workers=1,
    )
    return output


def _copy_records(records, directory, name="out.tfrecord"):
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / name
    shutil.copyfile(records, target)
    return target


def _read_all(pattern, **kwargs):
    dataset = pretraining_dataset(str(pattern), 4, SEQ, PREDICTIONS, is_training=False, **kwargs)
    with records_named_on_error():
        return sum(int(batch["input_word_ids"].shape[0]) for batch in dataset)


def _options(input_file, output_dir, **overrides):
    values = dict(
        bert_config=BertConfig.from_json_file(str(ORIGINAL_TINY / "bert_config.json")),
        input_file=str(input_file),
        do_train=True,
        output_dir=str(output_dir),
        max_seq_length=SEQ,
        max_predictions_per_seq=PREDICTIONS,
        train_batch_size=4,
        eval_batch_size=4,
        num_train_steps=4,
        num_warmup_steps=0,
        steps_per_loop=2,
        save_checkpoints_steps=2,
        log_steps=2,
        learning_rate=1e-4,
        seed=1,
    )
    values.update(overrides)
    return PretrainingOptions(**values)


# === 1, 2: nothing beside an output that its glob reads ===
def test_the_summary_beside_the_output_is_not_read_by_a_prefix_glob(records):
    # create_pretraining_data.py writes a summary beside its output; `out.tfrecord*` (the usual
    # way to read shards) read it as records: "corrupted record at 0", no file named.
    assert expand_input_patterns(f"{records}*") == [str(records)]
    summaries = [p.name for p in records.parent.iterdir() if "summary" in p.name]
    assert summaries == [".out.tfrecord.summary.json"]
    assert _read_all(f"{records}*") == 51


def test_a_killed_writers_temporary_is_neither_matched_nor_read(records, tmp_path):
    output = _copy_records(records, tmp_path)
    # What a writer leaves when killed -9 inside atomic_output (and the pre-training writer's
    # temporaries are named the same way): a dot file that `out.tfrecord*` does not match.
    with pytest.raises(KeyboardInterrupt):
        with atomic_output(str(tmp_path / "out.tfrecord-00001")) as temporary:
            shutil.copyfile(records, temporary)
            left_behind = tmp_path / "left_behind"
            shutil.copyfile(temporary, left_behind)
            raise KeyboardInterrupt
    left_behind.rename(temporary)  # as if the process had died before its cleanup ran
    assert expand_input_patterns(f"{output}*") == [str(output)]
    assert _read_all(f"{output}*") == 51
    # One of an earlier version (`out.tfrecord.tmp-PID`, matched by the glob) is refused,
    # named, before anything trains on the half-written file.
    shutil.copyfile(records, tmp_path / "out.tfrecord.tmp-4242")
    with pytest.raises(RecordFileError, match=r"out\.tfrecord\.tmp-4242 is a temporary file"):
        _read_all(f"{output}*")


def test_a_foreign_file_among_the_shards_is_named_before_training(records, tmp_path):
    _copy_records(records, tmp_path, "data-00000")
    (tmp_path / "data-00001").write_text('{"not": "records"}\n')
    with pytest.raises(RecordFileError, match=r"data-00001 is not a TFRecord file"):
        _read_all(tmp_path / "data-*")


def test_shards_without_records_are_skipped_with_one_warning(original_tiny_dir, tmp_path, caplog):
    """create_pretraining_data (ours and the original's) with more outputs than instances
    leaves the extra ones empty; the original trainer reads them as nothing, ours refused the
    glob ("shard-00002 is empty (0 bytes) ... remove it"). A GZIP shard of no records is 20
    bytes."""
    corpus = tmp_path / "two_documents.txt"
    corpus.write_text("The cat sat on the mat.\nIt was happy.\n\nDogs bark loudly at night.\n")
    shards = [tmp_path / "data" / f"shard-0000{i}" for i in range(4)]
    shards[0].parent.mkdir()
    write_pretraining_examples(
        [str(corpus)],
        [str(path) for path in shards],
        PretrainingDataSettings(
            vocab_file=str(original_tiny_dir / "vocab.txt"),
            max_seq_length=SEQ,
            max_predictions_per_seq=PREDICTIONS,
            dupe_factor=1,
        ),
        num_workers=1,
    )
    empty = [path for path in shards if path.stat().st_size == 0]
    assert len(empty) == 2
    with tf.io.TFRecordWriter(str(tmp_path / "data" / "shard-gzip"), "GZIP"):
        pass
    caplog.set_level("WARNING", logger=absl_logging.get_absl_logger().name)
    pattern = tmp_path / "data" / "shard-*"
    assert _read_all(pattern) == 2
    assert _read_all(pattern) == 2  # the run's second read (evaluation) warns no more
    warnings = [r.getMessage() for r in caplog.records if "hold no records" in r.getMessage()]
    skipped = ", ".join(str(path) for path in [*empty, tmp_path / "data" / "shard-gzip"])
    assert warnings == [
        f"--input_file: skipping 3 file(s) that hold no records (a writer's "
        f"shard that got none, as when create_pretraining_data has fewer instances than output "
        f"files): {skipped}"
    ]
    with pytest.raises(RecordFileError, match=r"every matched file holds no records \("):
        _read_all(",".join(str(path) for path in empty))
    # A single cached record file (run_classifier's, run_squad's) written empty is still an
    # error: its writer failed, and nothing else would be read.
    with pytest.raises(RecordFileError, match=r"shard-0000\d is empty \(0 bytes\)"):
        batched_records(str(empty[0]), lambda batch: batch, 2, is_training=False)


# === 3: a cut-short or damaged record names its file and offset ===
def test_a_truncated_shard_is_named_with_the_record_offset(records, tmp_path):
    _copy_records(records, tmp_path, "data-00000")
    truncated = _copy_records(records, tmp_path, "data-00001")
    size = truncated.stat().st_size
    with open(truncated, "r+b") as file:
        file.truncate(size // 2)
    with pytest.raises(RecordFileError, match=r"data-00001: a truncated record at byte \d+"):
        _read_all(tmp_path / "data-*")


def test_corrupted_bytes_inside_a_record_are_named(records, tmp_path):
    damaged = _copy_records(records, tmp_path, "data-00000")
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    with pytest.raises(RecordFileError, match=r"data-00000: a corrupted record at byte \d+"):
        _read_all(tmp_path / "data-*")


def test_run_pretraining_names_the_truncated_shard(records, tmp_path):
    """Through the runner's input iteration: the script's error, not just the reader's."""
    data = tmp_path / "data"
    _copy_records(records, data, "shard-00000")
    truncated = _copy_records(records, data, "shard-00001")
    with open(truncated, "r+b") as file:
        file.truncate(truncated.stat().st_size - 100)
    with pytest.raises(RecordFileError, match=r"shard-00001: a truncated record at byte \d+"):
        run_pretraining(_options(data / "shard-*", tmp_path / "run", num_train_steps=40))


# === 4: ids beyond the model's vocabulary ===
def test_ids_beyond_vocab_size_name_the_file_and_both_sizes(records, tmp_path):
    # The records were written with a 1000-word vocab; a model of 100 words cannot take them
    # (a gather error on CPU, silently zeros on a GPU).
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        _read_all(records, vocab_size=100)
    message = str(raised.value)
    assert str(records) in message
    assert "vocab_size is 100" in message
    largest = int(re.search(r"the largest id is\]? \[?(\d+)", message).group(1))
    assert 100 <= largest < 1000
    assert _read_all(records, vocab_size=1000) == 51  # the right vocab passes
    # What a script prints of it: the check's own sentence, without TensorFlow's node names.
    assert input_check_message(raised.value) == (
        "token ids beyond the model's vocabulary in input_word_ids/masked_lm_ids: the largest "
        f"id is {largest} but vocab_size is 100 (records written with another vocab.txt?); "
        f"file: {records}"
    )
    assert input_check_message(tf.errors.InvalidArgumentError(None, None, "x")) is None


def test_run_pretraining_reports_ids_beyond_the_vocabulary_in_one_line(records, tmp_path):
    config = BertConfig.from_json_file(str(ORIGINAL_TINY / "bert_config.json"))
    config.vocab_size = 100
    config.to_json_file(str(tmp_path / "bert_config.json"))
    result = run_script(
        [str(REPO_ROOT / "run_pretraining.py"), f"--input_file={records}",
         f"--bert_config_file={tmp_path / 'bert_config.json'}", f"--output_dir={tmp_path / 'run'}",
         "--do_train", f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDICTIONS}",
         "--train_batch_size=4", "--num_train_steps=2", "--num_warmup_steps=0"],
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "run_pretraining.py: error: token ids beyond the model's vocabulary in input_word_ids"
        )
    ), result.stderr[-3000:]
    assert "Traceback" not in result.stderr


def test_fine_tuning_records_get_the_same_id_check(tmp_path):
    path = tmp_path / "train.tf_record"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for ids in ([2, 5, 3], [2, 250, 3]):
            feature = tf.train.Feature(int64_list=tf.train.Int64List(value=ids))
            example = tf.train.Example(features=tf.train.Features(feature={"input_ids": feature}))
            writer.write(example.SerializeToString())

    def parse(serialized):
        parsed = tf.io.parse_example(
            serialized, {"input_ids": tf.io.FixedLenFeature([3], tf.int64)}
        )
        return {"input_word_ids": parsed["input_ids"]}

    dataset = batched_records(str(path), parse, 2, False, vocab_size=100)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"vocab_size is 100.*train\.tf_rec"):
        list(dataset)


# === 5: a cut-short checkpoint names its files ===
@pytest.fixture
def truncated_checkpoint(tmp_path, original_tiny_dir):
    directory = tmp_path / "damaged"
    directory.mkdir()
    for name in ("bert_config.json", "vocab.txt", "bert_model.ckpt.index"):
        shutil.copyfile(original_tiny_dir / name, directory / name)
    data = (original_tiny_dir / "bert_model.ckpt.data-00000-of-00001").read_bytes()
    (directory / "bert_model.ckpt.data-00000-of-00001").write_bytes(data[: len(data) // 2])
    return directory / "bert_model.ckpt"


def test_a_truncated_checkpoint_names_its_files(truncated_checkpoint, tmp_path):
    config = BertConfig.from_json_file(str(ORIGINAL_TINY / "bert_config.json"))
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    model.build()
    expected = r"bert_model\.ckpt\.data-00000-of-00001 \(413140 bytes\)"
    with pytest.raises(DamagedCheckpointError, match=expected):
        load_bert_weights(model, str(truncated_checkpoint))
    # Given by its folder ($BERT_BASE_DIR), the files of the prefix it holds: the folder's own
    # `<folder>.*` were looked for, and the message said "its files: no files".
    with pytest.raises(DamagedCheckpointError, match=rf"bert_model\.ckpt: .*{expected}"):
        load_bert_weights(model, str(truncated_checkpoint.parent))
    # convert_checkpoint.py reads it through the same loader.
    with pytest.raises(DamagedCheckpointError, match=r"cannot read the checkpoint .*damaged"):
        convert_checkpoint(str(truncated_checkpoint), str(tmp_path / "out"), "safetensors")


def test_a_missing_init_checkpoint_is_named_before_the_data_is_converted(tmp_path):
    """A mistyped --init_checkpoint stops the run at once, not after the training set's
    features are written (minutes for a large task), and so does a folder of no checkpoint."""
    from official_bert.tasks.classification import ClassifierOptions
    from official_bert.tasks.registry import run_classifier

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    write_tiny_task(data_dir)
    (tmp_path / "empty").mkdir()
    for init_checkpoint, expected in (
        (tmp_path / "nope" / "bert_model.ckpt", r"checkpoint not found: .*nope/bert_model\.ckpt"),
        (tmp_path / "empty", "no checkpoint found in directory"),
    ):
        output_dir = tmp_path / "output"
        options = ClassifierOptions(
            task_name="generic",
            labels=["neg", "pos"],
            data_dir=str(data_dir),
            output_dir=str(output_dir),
            bert_config_file=str(ORIGINAL_TINY / "bert_config.json"),
            vocab_file=str(ORIGINAL_TINY / "vocab.txt"),
            init_checkpoint=str(init_checkpoint),
            do_train=True,
            max_seq_length=16,
        )
        with pytest.raises(FileNotFoundError, match=expected):
            run_classifier(options)
        assert not output_dir.exists() or not list(output_dir.iterdir())


# === 6: no checkpoint with non-finite weights is written or called good ===
def _finite(checkpoint_prefix) -> bool:
    reader = tf.train.load_checkpoint(checkpoint_prefix)
    for name, dtype in reader.get_variable_to_dtype_map().items():
        if dtype.is_floating and not np.all(np.isfinite(reader.get_tensor(name))):
            return False
    return True


def test_a_diverging_run_never_saves_non_finite_weights(records, tmp_path):
    output = tmp_path / "diverging"
    options = _options(
        records,
        output,
        learning_rate=1e6,
        num_train_steps=12,
        steps_per_loop=1,
        save_checkpoints_steps=1,
    )
    with pytest.raises(FloatingPointError) as raised:
        run_pretraining(options)
    keras.backend.clear_session()
    saved = tf.train.get_checkpoint_state(str(output))
    assert saved is not None, "the run should have saved before diverging"
    assert all(_finite(path) for path in saved.all_model_checkpoint_paths)
    assert f"last good checkpoint: {saved.model_checkpoint_path}" in str(raised.value)


def _tiny_runner(output_dir):
    def model_fn():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.build((None, 2))
        return model

    return Runner(
        tf.distribute.OneDeviceStrategy("/cpu:0"),
        model_fn,
        lambda: keras.optimizers.SGD(0.1),
        lambda outputs, batch: tf.reduce_mean(tf.square(outputs - batch["y"])),
        TrainingOptions(output_dir=str(output_dir), steps_per_loop=1),
        num_train_steps=2,
    )


def test_a_rerun_passes_over_a_non_finite_checkpoint_of_an_older_version(tmp_path, caplog):
    runner = _tiny_runner(tmp_path)
    runner.restore_or_initialize()
    for step in (1, 2):
        runner.optimizer.iterations.assign(step)
        runner.manager.save(checkpoint_number=step, check_interval=False)
    # What an unguarded save wrote after a diverging step.
    runner.model.layers[0].kernel.assign(np.full((2, 1), np.nan, np.float32))
    runner.optimizer.iterations.assign(3)
    runner.manager.save(checkpoint_number=3, check_interval=False)
    # The guard itself refuses to write such weights.
    runner.optimizer.iterations.assign(4)
    with pytest.raises(FloatingPointError, match=r"non-finite values after step 4 .*not saved"):
        runner._save(force=True)
    assert not list(tmp_path.glob("ckpt-4*"))

    resumed = _tiny_runner(tmp_path)
    with caplog.at_level("WARNING"):
        assert resumed.restore_or_initialize()
    assert resumed.step == 2
    assert np.all(np.isfinite(resumed.model.layers[0].kernel.numpy()))
    assert resumed.last_finite_checkpoint.endswith("ckpt-2")
    assert re.search(r"Passed over .*ckpt-3 .*resuming from .*ckpt-2", caplog.text)


# === 7: the original's TPU flags ===
def test_zone_and_project_reach_the_tpu_cluster_resolver(monkeypatch):
    calls = []

    class FakeResolver:
        def __init__(self, tpu=None, zone=None, project=None):
            calls.append({"tpu": tpu, "zone": zone, "project": project})
            raise ValueError("fake resolver: no TPU here")

    monkeypatch.setattr(distribution.socket, "create_connection", lambda *a, **k: _NoConnection())
    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", FakeResolver)
    with pytest.raises(ConnectionError, match="fake resolver"):
        distribution.create_strategy(
            "tpu", "my-tpu", {"output_dir": "gs://b/o"}, zone="us-central1-b", project="proj"
        )
    assert calls == [{"tpu": "my-tpu", "zone": "us-central1-b", "project": "proj"}]


class _NoConnection:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_use_tpu_with_master_names_the_tpu_as_in_the_original():
    values = flags.FlagValues()
    define_option_flags(TrainingOptions, values)
    values(
        [
            "prog",
            "--output_dir=gs://b/o",
            "--use_tpu",
            "--master=grpc://10.0.0.2:8470",
            "--tpu_zone=europe-west4-a",
            "--gcp_project=proj",
        ]
    )
    options = options_from_flags(TrainingOptions, values)
    assert options.distribution_strategy == "tpu"
    assert options.tpu == "grpc://10.0.0.2:8470"
    assert (options.tpu_zone, options.gcp_project) == ("europe-west4-a", "proj")


# === 8: the original's eval_results.txt `loss` line; help that points to real flags ===
def test_eval_results_have_the_originals_loss_line(records, tmp_path):
    output = tmp_path / "eval"
    options = _options(
        records, output, do_train=False, do_eval=True, init_checkpoint=str(ORIGINAL_TINY)
    )
    run_pretraining(options)
    results = dict(
        line.split(" = ") for line in (output / "eval_results.txt").read_text().splitlines()
    )
    assert {"loss", "masked_lm_loss", "next_sentence_loss", "global_step"} <= set(results)
    # The original's loss is the mean of the batches' total losses: close to the sum of parts.
    parts = float(results["masked_lm_loss"]) + float(results["next_sentence_loss"])
    assert abs(float(results["loss"]) - parts) < 0.1 * parts


def test_extract_features_help_names_only_flags_it_defines():
    """A flag named in a help text is one of the script's (or follows another script's name)."""
    tree = ast.parse((REPO_ROOT / "official_bert" / "commands" / "extract_features.py").read_text())
    defined, helps = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "").startswith("DEFINE_"):
            defined.add(node.args[0].value)
            helps += [a.value for a in node.args[1:] if isinstance(a, ast.Constant)]
    mentioned = {
        name
        for text in helps
        if isinstance(text, str)
        for name in re.findall(r"(?<!\.py )--(\w+)", text)
    }
    assert mentioned <= defined, mentioned - defined


@pytest.mark.parametrize(
    ("flag", "value", "least"),
    [
        ("train_batch_size", 0, 1),
        ("eval_batch_size", 0, 1),
        ("predict_batch_size", 0, 1),
        ("iterations_per_loop", 0, 1),
        # 0 means something for these (only the last checkpoint; keep all), -1 nothing.
        ("save_checkpoints_steps", -1, 0),
        ("keep_checkpoint_max", -1, 0),
    ],
)
def test_a_count_out_of_range_is_named_before_anything_runs(flag, value, least, tmp_path):
    from official_bert.tasks.classification import ClassifierOptions

    with pytest.raises(ValueError, match=rf"^--{flag} must be at least {least}, got {value}$"):
        ClassifierOptions(
            task_name="MRPC",
            data_dir=str(tmp_path),
            output_dir=str(tmp_path / "out"),
            bert_config_file=str(ORIGINAL_TINY / "bert_config.json"),
            **{flag: value},
        )


def test_extract_features_and_run_classifier_name_a_zero_size_and_a_file_as_output_dir(
    tmp_path, original_tiny_dir
):
    text = tmp_path / "input.txt"
    text.write_text("one line\n")
    checkpoint = [
        f"--init_checkpoint={original_tiny_dir / 'bert_model.ckpt'}",
        f"--vocab_file={original_tiny_dir / 'vocab.txt'}",
        f"--bert_config_file={original_tiny_dir / 'bert_config.json'}",
    ]
    for flag in ("--batch_size=0", "--max_seq_length=0"):
        result = run_script(
            [str(REPO_ROOT / "extract_features.py"), f"--input_file={text}",
             f"--output_file={tmp_path / 'out.jsonl'}", *checkpoint, flag],
            cwd=tmp_path,
        )  # fmt: skip
        name = flag[2:].split("=")[0]
        assert result.stderr.strip().splitlines()[-1] == (
            f"extract_features.py: error: --{name} must be at least 1, got 0"
        ), result.stderr[-2000:]
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    write_tiny_task(tmp_path / "data")
    result = run_script(
        [str(REPO_ROOT / "run_classifier.py"), "--task_name=generic", f"--data_dir={tmp_path / 'data'}",
         f"--output_dir={a_file}", "--do_train", *checkpoint],
        cwd=tmp_path,
    )  # fmt: skip
    assert result.stderr.strip().splitlines()[-1] == (
        f"run_classifier.py: error: --output_dir={a_file} is a file; expected a folder"
    ), result.stderr[-2000:]
