"""A run that resumes an output_dir's checkpoints on another task or data says so."""

import json

from absl import logging as absl_logging

from official_bert.tasks.classification import ClassifierOptions
from official_bert.tasks.registry import run_classifier
from official_bert.tasks.trained_on import RECORD_NAME, trained_on
from tests.conftest import ORIGINAL_TINY
from tests.tiny_data import write_tiny_task


def _options(data_dir, output_dir, **overrides):
    values = dict(
        task_name="generic",
        data_dir=str(data_dir),
        output_dir=str(output_dir),
        init_checkpoint=str(ORIGINAL_TINY / "bert_model.ckpt"),
        max_seq_length=32,
        train_batch_size=16,
        num_train_epochs=0.5,
        do_train=True,
        fast_kernels=False,
    )
    values.update(overrides)
    return ClassifierOptions(**values)


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
        "task_name": "generic",
    }
    caplog.set_level("WARNING", logger=absl_logging.get_absl_logger().name)
    # The same data under another spelling (relative path, trailing slash, upper case task).
    same = _options(f"{first}/", output_dir, task_name="GENERIC", do_train=False, do_eval=True)
    assert trained_on(same) == trained_on(_options(first, output_dir))
    run_classifier(same)
    assert "Resuming" not in caplog.text
    run_classifier(_options(second, output_dir, num_train_epochs=1.0))
    assert f"trained on --data_dir={first}; this run names --data_dir={second}" in caplog.text
    assert json.loads((output_dir / RECORD_NAME).read_text())["data_dir"] == str(second)
