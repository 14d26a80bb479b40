"""An output_dir the original's code (its TF1 Estimator) trained into: the original README's
predict commands point --output_dir at it, and the original restores its latest checkpoint."""

import numpy as np
import pytest

from official_bert.checkpoints.original_tf1 import write_original_checkpoint
from official_bert.config import BertConfig
from official_bert.models import BertClassifier, BertEncoder
from official_bert.tasks.registry import run_classifier
from tests.conftest import ORIGINAL_TINY
from tests.tiny_data import tiny_classifier_options, write_tiny_task

HEAD_BIAS = (3.0, -3.0)


def _write_original_fine_tuned(prefix: str) -> None:
    """An original-layout classifier checkpoint (bert/..., output_weights, output_bias) whose
    head ignores its input: logits HEAD_BIAS for every example."""
    config = BertConfig.from_json_file(str(ORIGINAL_TINY / "bert_config.json"))
    model = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2)
    model.build()
    model.classifier.dense.kernel.assign(np.zeros(model.classifier.dense.kernel.shape))
    model.classifier.dense.bias.assign(HEAD_BIAS)
    write_original_checkpoint(model, prefix)


def test_predicting_restores_output_dirs_original_layout_checkpoint_head_included(tmp_path):
    data_dir, output_dir = tmp_path / "data", tmp_path / "out"
    write_tiny_task(data_dir, counts=(8, 8, 4))
    _write_original_fine_tuned(str(output_dir / "model.ckpt-3"))

    run_classifier(tiny_classifier_options(data_dir, output_dir, do_train=False, do_predict=True))
    probabilities = np.loadtxt(output_dir / "test_results.tsv", ndmin=2)
    expected = np.exp(HEAD_BIAS) / np.exp(HEAD_BIAS).sum()
    np.testing.assert_allclose(probabilities, np.tile(expected, (4, 1)), atol=1e-6)

    # Training on does not: the checkpoint holds none of the runner's optimizer state.
    with pytest.raises(ValueError, match=r"model\.ckpt-3, a checkpoint in the original's layout"):
        run_classifier(
            tiny_classifier_options(data_dir, output_dir, train_batch_size=8, num_train_epochs=1.0)
        )


def test_a_moved_output_dir_whose_state_names_absolute_paths_is_read_where_it_is(tmp_path):
    """TF1's Saver wrote absolute paths into the `checkpoint` state file: an output_dir copied
    from another machine names files that are not there; the ones beside the state are read."""
    data_dir, output_dir = tmp_path / "data", tmp_path / "out"
    write_tiny_task(data_dir, counts=(8, 8, 4))
    _write_original_fine_tuned(str(output_dir / "model.ckpt-3"))
    (output_dir / "checkpoint").write_text(
        'model_checkpoint_path: "/gone/bert_output/model.ckpt-3"\n'
        'all_model_checkpoint_paths: "/gone/bert_output/model.ckpt-1"\n'
        'all_model_checkpoint_paths: "/gone/bert_output/model.ckpt-3"\n'
    )

    run_classifier(tiny_classifier_options(data_dir, output_dir, do_train=False, do_predict=True))
    probabilities = np.loadtxt(output_dir / "test_results.tsv", ndmin=2)
    expected = np.exp(HEAD_BIAS) / np.exp(HEAD_BIAS).sum()
    np.testing.assert_allclose(probabilities, np.tile(expected, (4, 1)), atol=1e-6)
