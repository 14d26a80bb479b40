"""`--export_dir` without `--do_train`: the driver exports the model restored from output_dir's
checkpoint (a model fine-tuned earlier) or from --init_checkpoint, and the served answers equal
those of the export written right after training."""

from pathlib import Path

import numpy as np
import pytest

from official_bert.tasks.registry import run_classifier
from tests.export.fresh_process import serve_each_in_one_fresh_process
from tests.tiny_data import tiny_sentiment_options, write_tiny_sentiment_setup

TEXTS = ["a good and fine day", "bad awful things", "fine"]


@pytest.fixture(scope="module")
def tiny_task(tmp_path_factory):
    directory = tmp_path_factory.mktemp("export_without_training")
    return write_tiny_sentiment_setup(directory, counts=(32, 16, 8))


_options = tiny_sentiment_options

MULTI_LABEL = dict(multi_label=True, processor_kwargs=dict(labels=["neg", "pos"], multi_label=True))
TASKS = {"single_label": {}, "multi_label": MULTI_LABEL}
SERVING_WAYS = {
    "keras": dict(fast_kernels=False),
    "fused": {},
    "bfloat16": dict(serving_dtype="bfloat16"),
}


@pytest.fixture(scope="module")
def untrained_exports(tiny_task, tmp_path_factory):
    """exports(task id) -> {way: export dir}: the model of --init_checkpoint (a random head with
    seed 1, no training) of TASKS[task id] exported the SERVING_WAYS, each task's on its first
    request; the single-label "fused" export is also the untrained model the first test compares
    with."""
    made = {}

    def exports(task_id):
        if task_id not in made:
            directory = tmp_path_factory.mktemp(f"untrained_{task_id}")
            made[task_id] = {}
            for way, overrides in SERVING_WAYS.items():
                export_dir = str(directory / f"{way}_sm")
                results = run_classifier(
                    _options(
                        tiny_task,
                        directory / way,
                        export_dir=export_dir,
                        **overrides,
                        **TASKS[task_id],
                    )
                )
                assert results["export_dir"] == export_dir
                made[task_id][way] = export_dir
        return made[task_id]

    return exports


def test_a_model_fine_tuned_earlier_is_exported_without_training(
    tiny_task, tmp_path, untrained_exports
):
    output_dir = tmp_path / "out"
    trained = run_classifier(
        _options(tiny_task, output_dir, do_train=True, export_dir=str(tmp_path / "after"))
    )
    assert trained["export_dir"] == str(tmp_path / "after")
    # Nothing but the export asked: the checkpoint in output_dir is restored and served.
    later = run_classifier(_options(tiny_task, output_dir, export_dir=str(tmp_path / "later")))
    assert later["export_dir"] == str(tmp_path / "later") and later["history"] == []
    # The test can fail: the fine-tuned model is not the one it started from.
    initial = untrained_exports("single_label")["fused"]
    after, again, untrained = serve_each_in_one_fresh_process(
        [tmp_path / "after", tmp_path / "later", initial], {"text_a": TEXTS}
    )
    np.testing.assert_allclose(again["probabilities"], after["probabilities"], atol=1e-6)
    assert np.abs(np.array(untrained["probabilities"]) - after["probabilities"]).max() > 1e-3


def test_nothing_asked_is_still_an_error(tiny_task, tmp_path):
    with pytest.raises(ValueError, match="or name `export_dir`"):
        run_classifier(_options(tiny_task, tmp_path / "out"))


def test_an_export_dir_holding_the_users_files_is_refused_before_any_work(tiny_task, tmp_path):
    # The export replaces an earlier export only: a folder of data (here the one holding
    # output_dir) is refused, before training, and keeps everything.
    (tmp_path / "precious.txt").write_text("mine")
    with pytest.raises(FileExistsError, match=r"--export_dir .* is not a SavedModel \(it holds"):
        run_classifier(
            _options(tiny_task, tmp_path / "out", do_train=True, export_dir=str(tmp_path))
        )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["precious.txt"]


@pytest.mark.parametrize("task_id", TASKS)
def test_serving_encoder_fused_float32_bfloat16_and_keras_agree(untrained_exports, task_id):
    """The same model (from --init_checkpoint, a random head with seed 1) served three ways:
    the Keras model (--fast_kernels=false), FusedInferenceEncoder in float32 (the default) and
    with bfloat16 weights (--serving_dtype=bfloat16); single-label (softmax) and multi-label
    (per-label sigmoid) serving models alike."""
    exports = untrained_exports(task_id)
    outputs = serve_each_in_one_fresh_process(list(exports.values()), {"text_a": TEXTS})
    served = {
        name: np.array(output["probabilities"])
        for name, output in zip(exports, outputs, strict=True)
    }
    np.testing.assert_allclose(served["fused"], served["keras"], atol=1e-5)
    error = np.abs(served["bfloat16"] - served["fused"]).max()
    assert 0 < error < 2e-2, error
    # Only the variables of one encoder are saved: the bfloat16 model is the smaller one.
    sizes = {
        name: sum(f.stat().st_size for f in (Path(export) / "variables").iterdir())
        for name, export in exports.items()
    }
    assert sizes["fused"] < 1.2 * sizes["keras"] and sizes["bfloat16"] < 0.7 * sizes["fused"], sizes


def test_serving_dtype_bfloat16_where_it_cannot_apply(tiny_task, tmp_path):
    for overrides, fragment in (
        (dict(fast_kernels=False), "needs `fast_kernels`"),
        (dict(feature_mode="frozen_last"), "needs `fast_kernels` and `feature_mode=finetune`"),
    ):
        with pytest.raises(ValueError, match=fragment):
            run_classifier(
                _options(
                    tiny_task,
                    tmp_path / "out",
                    export_dir=str(tmp_path / "sm"),
                    serving_dtype="bfloat16",
                    **overrides,
                )
            )
