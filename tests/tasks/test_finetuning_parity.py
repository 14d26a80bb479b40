"""Fine-tuning parity with Hugging Face transformers on PyTorch: the runner, BertClassifier,
`adamw_torch` with `decay_after_warmup`, clipping and the loss follow the torch recipe's loss
curve step by step (all-MiniLM-L6-v2 on the sentence pairs of samples/review_pairs, read by the
MRPC processor; dropout off, the same batches and
classifier initialization). The reference losses come from
tests/fixtures/make_hf_finetuning_trajectory.py."""

import json
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.checkpoints.loading import load_bert_weights, read_bert_config
from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.data.classification.examples import get_processor
from official_bert.data.classification.features import encode_classifier_examples
from official_bert.models import BertClassifier, BertEncoder
from official_bert.tasks.classification_objective import classifier_loss_fn
from official_bert.training.optimization import create_optimizer
from official_bert.training.runner import Runner
from official_bert.training.training_options import TrainingOptions

FIXTURE = pathlib.Path(__file__).parents[1] / "fixtures" / "hf_finetuning_trajectory.json"
PAIRS = pathlib.Path(__file__).parents[2] / "samples" / "review_pairs"
REFERENCE = json.loads(FIXTURE.read_text())
RECIPE = REFERENCE["recipe"]


@pytest.fixture(scope="module")
def pair_batches(minilm_dir):
    examples = get_processor("mrpc", str(PAIRS)).get_train_examples()[: RECIPE["examples"]]
    packer = BertInputPacker(str(minilm_dir / "vocab.txt"), RECIPE["max_seq_length"])
    arrays = encode_classifier_examples(examples, packer, ["0", "1"])
    return {
        "input_word_ids": arrays["input_ids"].astype(np.int32),
        "input_mask": arrays["input_mask"].astype(np.int32),
        "input_type_ids": arrays["segment_ids"].astype(np.int32),
        "label_ids": arrays["label_ids"][:, 0].astype(np.int32),
    }


def train_losses(minilm_dir, batches, output_dir, steps=None, **optimizer_options):
    """Per-step losses of the runner on the reference recipe (batches in order); `steps`: stop
    after this many (the schedule stays the recipe's), all of the recipe's by default."""
    config = read_bert_config(str(minilm_dir / "config.json"))
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.0

    def model_fn():
        model = BertClassifier(BertEncoder.from_bert_config(config), 2, dropout_rate=0.0)
        model.build()
        load_bert_weights(model, str(minilm_dir))
        # The reference's head: N(0, 0.02) from numpy's default_rng(seed), bias 0.
        rng = np.random.default_rng(RECIPE["classifier_init_seed"])
        kernel = rng.normal(0.0, 0.02, (config.hidden_size, 2)).astype(np.float32)
        model.classifier.set_weights([kernel, np.zeros([2], np.float32)])
        return model

    def optimizer_fn():
        return create_optimizer(
            RECIPE["learning_rate"],
            RECIPE["num_train_steps"],
            RECIPE["num_warmup_steps"],
            weight_decay_rate=RECIPE["weight_decay"],
            clip_norm=RECIPE["clip_norm"],
            **optimizer_options,
        )

    def dataset_fn(input_context):
        return tf.data.Dataset.from_tensor_slices(batches).batch(RECIPE["batch_size"]).repeat()

    keras.utils.set_random_seed(0)
    runner = Runner(
        tf.distribute.OneDeviceStrategy("/cpu:0"),
        model_fn,
        optimizer_fn,
        classifier_loss_fn(is_regression=False),
        TrainingOptions(
            output_dir=str(output_dir),
            steps_per_loop=1,
            save_checkpoints_steps=1000,
            log_steps=1000,
        ),
        num_train_steps=steps or RECIPE["num_train_steps"],
    )
    history = runner.train(dataset_fn, RECIPE["batch_size"])
    return np.array([loss for _, loss in history])


def test_torch_recipe_follows_the_hugging_face_loss_curve(minilm_dir, pair_batches, tmp_path):
    expected = np.array(REFERENCE["losses"])
    # The reference trains: the curve is worth matching.
    assert expected[-6:].mean() < expected[:6].mean() - 0.05
    ours = train_losses(
        minilm_dir,
        pair_batches,
        tmp_path / "torch_recipe",
        optimizer_type="adamw_torch",
        decay_after_warmup=True,
    )
    # Measured: 4.5e-7 (float32 rounding) over 24 steps, clipping active in 11 of them.
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-5)
    # The test can fail: the original schedule (decay from step 0: 0.83x the rate here after
    # warm-up) leaves the curve, a hundred times the tolerance above, as soon as warm-up ends
    # (measured: 1.2e-3 at the sixth step, 0.0086 at the twelfth).
    steps = 6
    original_schedule = train_losses(
        minilm_dir,
        pair_batches,
        tmp_path / "original_schedule",
        steps,
        optimizer_type="adamw_torch",
    )
    assert np.abs(original_schedule - expected[:steps]).max() > 1e-4
