"""`--export_dir` without `--do_train`: the driver exports the model restored from output_dir's
checkpoint (a model fine-tuned earlier) or from --init_checkpoint, and the served answers equal
those of the export written right after training."""

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


def test_a_model_fine_tuned_earlier_is_exported_without_training(tiny_task, tmp_path):
    output_dir = tmp_path / "out"
    trained = run_classifier(
        _options(tiny_task, output_dir, do_train=True, export_dir=str(tmp_path / "after"))
    )
    assert trained["export_dir"] == str(tmp_path / "after")
    # Nothing but the export asked: the checkpoint in output_dir is restored and served.
    later = run_classifier(_options(tiny_task, output_dir, export_dir=str(tmp_path / "later")))
    assert later["export_dir"] == str(tmp_path / "later") and later["history"] == []
    # The test can fail: the fine-tuned model is not the one it started from.
    initial = run_classifier(
        _options(tiny_task, tmp_path / "fresh", export_dir=str(tmp_path / "initial"))
    )
    assert initial["export_dir"] == str(tmp_path / "initial")
    after, again, untrained = serve_each_in_one_fresh_process(
        [tmp_path / "after", tmp_path / "later", tmp_path / "initial"], {"text_a": TEXTS}
    )
    np.testing.assert_allclose(again["probabilities"], after["probabilities"], atol=1e-6)
    assert np.abs(np.array(untrained["probabilities"]) - after["probabilities"]).max() > 1e-3


def test_nothing_asked_is_still_an_error(tiny_task, tmp_path):
    with pytest.raises(ValueError, match="or name `export_dir`"):
        run_classifier(_options(tiny_task, tmp_path / "out"))


MULTI_LABEL = dict(multi_label=True, processor_kwargs=dict(labels=["neg", "pos"], multi_label=True))


@pytest.mark.parametrize("task", [{}, MULTI_LABEL], ids=["single_label", "multi_label"])
def test_serving_encoder_fused_float32_bfloat16_and_keras_agree(tiny_task, tmp_path, task):
    """The same model (from --init_checkpoint, a random head with seed 1) served three ways:
    the Keras model (--fast_kernels=false), FusedInferenceEncoder in float32 (the default) and
    with bfloat16 weights (--serving_dtype=bfloat16); single-label (softmax) and multi-label
    (per-label sigmoid) serving models alike."""
    served = {}
    for name, overrides in (
        ("keras", dict(fast_kernels=False)),
        ("fused", {}),
        ("bfloat16", dict(serving_dtype="bfloat16")),
    ):
        run_classifier(
            _options(
                tiny_task,
                tmp_path / name,
                export_dir=str(tmp_path / f"{name}_sm"),
                **overrides,
                **task,
            )
        )
    outputs = serve_each_in_one_fresh_process(
        [tmp_path / "keras_sm", tmp_path / "fused_sm", tmp_path / "bfloat16_sm"],
        {"text_a": TEXTS},
    )
    for name, output in zip(("keras", "fused", "bfloat16"), outputs, strict=True):
        served[name] = np.array(output["probabilities"])
    np.testing.assert_allclose(served["fused"], served["keras"], atol=1e-5)
    error = np.abs(served["bfloat16"] - served["fused"]).max()
    assert 0 < error < 2e-2, error
    # Only the variables of one encoder are saved: the bfloat16 model is the smaller one.
    sizes = {
        name: sum(f.stat().st_size for f in (tmp_path / f"{name}_sm" / "variables").iterdir())
        for name in served
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
