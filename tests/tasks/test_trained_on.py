"""A run that resumes an output_dir's checkpoints on another task or data says so."""

import json
from types import SimpleNamespace

from absl import logging as absl_logging

from official_bert.tasks.registry import run_classifier
from official_bert.tasks.trained_on import (
    RECORD_NAME,
    record_training,
    trained_on,
    warn_if_resumed_on_other_data,
)
from tests.conftest import ORIGINAL_TINY
from tests.tiny_data import tiny_classifier_options, write_tiny_task


def _options(data_dir, output_dir, **overrides):
    """tiny_classifier_options without the serving export, which these tests never read."""
    return tiny_classifier_options(data_dir, output_dir, **{"export_dir": "", **overrides})


def test_resuming_on_other_data_is_a_warning_and_the_same_data_named_otherwise_is_not(
    tmp_path, caplog
):
    first, second = tmp_path / "first", tmp_path / "second"
    write_tiny_task(first, seed=0)
    write_tiny_task(second, seed=1)
    output_dir = tmp_path / "out"
    run_classifier(_options(first, output_dir))
    assert json.loads((output_dir / RECORD_NAME).read_text()) == {
        "data_dir": str(first),
        "init_checkpoint": str(ORIGINAL_TINY / "bert_model.ckpt"),
        "task_name": "generic",
        "labels": ["neg", "pos"],
    }
    caplog.set_level("WARNING", logger=absl_logging.get_absl_logger().name)
    # The same data under another spelling (relative path, trailing slash, upper case task).
    same = _options(f"{first}/", output_dir, task_name="GENERIC", do_train=False, do_eval=True)
    assert trained_on(same) == trained_on(_options(first, output_dir))
    # A run that does not train is not warned, even on other data: evaluating the trained model
    # elsewhere is the original's workflow (--task_name=MNLI-MM --do_eval on MNLI's output_dir),
    # where "use another --output_dir" would evaluate --init_checkpoint instead.
    run_classifier(_options(second, output_dir, do_train=False, do_eval=True))
    assert "Resuming" not in caplog.text
    run_classifier(_options(second, output_dir, num_train_epochs=1.0))
    assert f"trained on --data_dir={first}; this run names --data_dir={second}" in caplog.text
    assert json.loads((output_dir / RECORD_NAME).read_text())["data_dir"] == str(second)


def test_input_files_are_compared_by_the_files_they_match(tmp_path, caplog):
    """run_pretraining's --input_file (comma-separated globs): `r*.tfr` then `r2.tfr,r1.tfr`
    name the same files (the warning fired on the words); a glob that now matches another file
    is other data, and the warning counts the files."""
    for name in ("r1.tfr", "r2.tfr"):
        (tmp_path / name).write_bytes(b"records")
    output_dir = tmp_path / "out"
    output_dir.mkdir()
    glob = f"{tmp_path}/r*.tfr"
    record_training(str(output_dir), SimpleNamespace(input_file=glob))
    assert json.loads((output_dir / RECORD_NAME).read_text()) == {
        "input_file": glob,
        "input_file matches": [str(tmp_path / "r1.tfr"), str(tmp_path / "r2.tfr")],
    }
    caplog.set_level("WARNING", logger=absl_logging.get_absl_logger().name)

    def warns(input_file):
        options = SimpleNamespace(input_file=input_file)
        return warn_if_resumed_on_other_data(str(output_dir), "ckpt-3", options)

    assert not warns(f"{tmp_path}/r2.tfr,{tmp_path}/r1.tfr")
    assert not warns(glob)
    assert warns(f"{tmp_path}/r1.tfr")
    (tmp_path / "r3.tfr").write_bytes(b"records")
    assert warns(glob)
    assert (
        f"Resuming ckpt-3, trained on --input_file={glob} (2 files); this run names "
        f"--input_file={glob} (3 files)"
    ) in caplog.text
    # A record of an earlier version (the flag's words only) is compared by the words.
    (output_dir / RECORD_NAME).write_text(json.dumps({"input_file": glob}))
    assert not warns(glob)
    assert warns(f"{tmp_path}/r1.tfr,{tmp_path}/r2.tfr")


def test_another_init_checkpoint_is_named_when_resuming(tmp_path, monkeypatch, caplog):
    """A rerun naming another --init_checkpoint resumes the fine-tuned model (as the original
    does) and is warned with both names; the record keeps the weights the model descends from."""
    output_dir = tmp_path / "out"
    output_dir.mkdir()
    first, second = str(tmp_path / "a" / "bert_model.ckpt"), str(tmp_path / "b" / "model.ckpt")
    record_training(str(output_dir), SimpleNamespace(task_name="MRPC", init_checkpoint=first))
    caplog.set_level("WARNING", logger=absl_logging.get_absl_logger().name)

    def warns(init_checkpoint):
        options = SimpleNamespace(task_name="mrpc", init_checkpoint=init_checkpoint)
        return warn_if_resumed_on_other_data(str(output_dir), "ckpt-3", options)

    monkeypatch.chdir(tmp_path)
    assert not warns("a/bert_model.ckpt")
    assert warns(second)
    assert (
        f"Resuming ckpt-3, trained on --init_checkpoint={first}; this run names "
        f"--init_checkpoint={second}"
    ) in caplog.text
    # Random initialization is recorded too: a checkpoint named later is another start.
    assert warns(None) and "this run names --init_checkpoint=None" in caplog.text
    resumed = SimpleNamespace(task_name="mrpc", init_checkpoint=second)
    record_training(str(output_dir), resumed, resumed=True)
    assert json.loads((output_dir / RECORD_NAME).read_text())["init_checkpoint"] == first
    # A record written before --init_checkpoint was recorded says nothing of it.
    (output_dir / RECORD_NAME).write_text(json.dumps({"task_name": "mrpc"}))
    assert not warns(second)


def test_resuming_with_the_labels_in_another_order_is_refused_in_every_mode(tmp_path):
    """A head's outputs are in the order of the labels it was trained with; a test-only data_dir
    needs --labels, and the same labels in another order would swap every prediction."""
    import pytest

    data_dir, output_dir = tmp_path / "data", tmp_path / "out"
    write_tiny_task(data_dir, counts=(32, 8, 4))
    run_classifier(_options(data_dir, output_dir))
    assert json.loads((output_dir / RECORD_NAME).read_text())["labels"] == ["neg", "pos"]
    for mode in (dict(do_train=False, do_predict=True), dict(num_train_epochs=1.0)):
        with pytest.raises(
            ValueError,
            match=r"trained with the labels \['neg', 'pos'\].*this run's are \['pos', 'neg'\].*"
            r"pass --labels=neg,pos",
        ):
            run_classifier(_options(data_dir, output_dir, labels=["pos", "neg"], **mode))
    # The trained order itself goes on.
    run_classifier(
        _options(data_dir, output_dir, labels=["neg", "pos"], do_train=False, do_predict=True)
    )
    assert len((output_dir / "test_results.tsv").read_text().splitlines()) == 4
