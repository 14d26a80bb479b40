"""Factories that put our BERT beside the peers of ../shared/bench (`time_ours.py`).

`time_ours.py --bench infer --factory bench_hooks:encoder_forward_fp32` calls
`encoder_forward_fp32(cfg, batch)` once per batch size and times the returned `forward()`;
`--bench train_step --factory bench_hooks:pretrain_step` times `pretrain_step(cfg, batch)()`.

  cfg: the harness's config dict (bench_common.CONFIGS): L layers, H hidden size, A heads,
    I intermediate size, V vocab size, S seq length, B batch, P masked positions, and name.
  batch (infer): numpy dict of int32 [batch, seq_length] `input_ids`, `input_mask`,
    `token_type_ids` (bench_common.make_infer_batch).
  batch (train_step): the same keys plus int32 [batch, P] `masked_lm_positions`,
    `masked_lm_ids`, float32 [batch, P] `masked_lm_weights`, int32 [batch]
    `next_sentence_labels` (bench_common.make_pretrain_batch).

Every model is random-initialised (no checkpoint), as the peers are. The forward and the step
run inside one `tf.function` (XLA with the `_xla` factories), like the peers' scripts.
`runner_step_fp32` / `runner_step_bf16` time one update through the training Runner's own
compiled loop (what run_pretraining.py runs). `encoder_latency.py` and `train_step.py` use these
factories.

Every factory builds with the fast kernels on (official_bert.kernels, as the scripts'
`--fast_kernels` default), except the `_plain` ones: the same model on the plain layers, for an
A/B of the kernels. The switch (and, when on, the host allocator) is set by the factory, before
it makes its first tensor; the allocator is the process's, so an A/B of it needs one process per
side (train_step.py runs each variant in its own).
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from official_bert.kernels import FusedInferenceEncoder, use_fast_kernels  # noqa: E402
from official_bert.models import BertEncoder, BertPretrainer  # noqa: E402
from official_bert.tasks.pretraining_objective import (  # noqa: E402
    pretraining_loss,
    pretraining_loss_denominators,
)
from official_bert.training.distribution import create_strategy  # noqa: E402
from official_bert.training.optimization import create_optimizer  # noqa: E402
from official_bert.training.runner import Runner  # noqa: E402
from official_bert.training.training_options import TrainingOptions  # noqa: E402

# The dtype policy names of Keras 3, as the factories' names abbreviate them.
FP32 = "float32"
BF16 = "mixed_bfloat16"


def build_encoder(cfg: dict, dtype: str = FP32, fast_kernels: bool = True) -> BertEncoder:
    """A built, random-initialised BertEncoder with the sizes of a harness config.

    dtype: a Keras dtype policy name; "mixed_bfloat16" keeps float32 variables and computes in
    bfloat16 (the encoder's outputs are then bfloat16).
    fast_kernels: build on official_bert.kernels' speed paths (True) or the plain layers.
    """
    use_fast_kernels(fast_kernels)
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(
        vocab_size=cfg["V"],
        hidden_size=cfg["H"],
        num_layers=cfg["L"],
        num_attention_heads=cfg["A"],
        intermediate_size=cfg["I"],
        type_vocab_size=2,
        dtype=dtype,
    )
    encoder.build()
    return encoder


def encoder_inputs(batch: dict) -> dict:
    """The harness's numpy batch as the encoder's input dict of int32 [batch, seq] tensors."""
    return {
        "input_word_ids": tf.constant(batch["input_ids"], tf.int32),
        "input_mask": tf.constant(batch["input_mask"], tf.int32),
        "input_type_ids": tf.constant(batch["token_type_ids"], tf.int32),
    }


def _forward_on(encoder, call, batch: dict, jit_compile: bool = False):
    """forward(): `call(inputs)` (an encoder's eval-mode call) on `batch` in a tf.function that
    returns only sequence_output and pooled_output, as the peers' scripts return only these two;
    the caller syncs by fetching them (`.numpy()`). forward.encoder is the Keras encoder, so that
    callers (encoder_latency.py) can report its dtypes."""
    inputs = encoder_inputs(batch)

    @tf.function(jit_compile=jit_compile, reduce_retracing=True)
    def encoder_forward(inputs):
        outputs = call(inputs)
        return {
            "sequence_output": outputs["sequence_output"],
            "pooled_output": outputs["pooled_output"],
        }

    def forward():
        return encoder_forward(inputs)

    forward.encoder = encoder
    return forward


def make_encoder_forward(
    cfg: dict, batch: dict, dtype: str = FP32, jit_compile: bool = False, fast_kernels: bool = True
):
    """Returns forward(): one eval-mode encoder forward on `batch`.

    forward() returns {"sequence_output": [batch, seq, hidden], "pooled_output": [batch, hidden]}
    as tensors in the compute dtype (float32, or bfloat16 under mixed_bfloat16).
    """
    encoder = build_encoder(cfg, dtype, fast_kernels)
    return _forward_on(
        encoder, lambda inputs: encoder(inputs, training=False), batch, jit_compile=jit_compile
    )


def make_fused_encoder_forward(cfg: dict, batch: dict, weights_dtype: str = "float32"):
    """Returns forward(): one forward of FusedInferenceEncoder (official_bert.kernels) built
    from our float32 encoder, its weights stored in `weights_dtype` ("float32" or "bfloat16"),
    on `batch`; outputs as make_encoder_forward's, in that dtype."""
    encoder = build_encoder(cfg, FP32, fast_kernels=True)
    return _forward_on(encoder, FusedInferenceEncoder(encoder, dtype=weights_dtype), batch)


def encoder_forward_fp32_fused(cfg, batch):
    return make_fused_encoder_forward(cfg, batch, "float32")


def encoder_forward_bf16_fused(cfg, batch):
    return make_fused_encoder_forward(cfg, batch, "bfloat16")


def encoder_forward_fp32(cfg, batch):
    return make_encoder_forward(cfg, batch, FP32)


def encoder_forward_bf16(cfg, batch):
    return make_encoder_forward(cfg, batch, BF16)


def encoder_forward_fp32_plain(cfg, batch):
    return make_encoder_forward(cfg, batch, FP32, fast_kernels=False)


def encoder_forward_bf16_plain(cfg, batch):
    return make_encoder_forward(cfg, batch, BF16, fast_kernels=False)


def encoder_forward_fp32_xla(cfg, batch):
    return make_encoder_forward(cfg, batch, FP32, jit_compile=True)


def encoder_forward_bf16_xla(cfg, batch):
    return make_encoder_forward(cfg, batch, BF16, jit_compile=True)


def pretraining_features(batch: dict) -> dict:
    """The harness's train_step batch under our names: int32 [batch, seq] encoder inputs, int32
    [batch, P] masked_lm_positions / masked_lm_ids, float32 [batch, P] masked_lm_weights, int32
    [batch] next_sentence_labels (tensors)."""
    features = encoder_inputs(batch)
    for name in ("masked_lm_positions", "masked_lm_ids", "next_sentence_labels"):
        features[name] = tf.constant(batch[name], tf.int32)
    features["masked_lm_weights"] = tf.constant(batch["masked_lm_weights"], tf.float32)
    return features


def make_runner_step(
    cfg: dict,
    batch: dict,
    dtype: str = FP32,
    jit_compile: bool = False,
    fast_kernels: bool = True,
    last_layer_at_predictions_only: bool | None = None,
):
    """Returns step(): one update through the training Runner's compiled loop, as
    run_pretraining.py runs it (OneDeviceStrategy, `strategy.run`, the original loss normalized
    over the batch, the original AdamWeightDecay with warm-up + linear decay, global-norm clip
    1.0, dropout on), on `batch` repeated. step() returns the loss (float32 scalar tensor).
    No checkpoints or logs: those are per loop of steps_per_loop steps, not per step.
    last_layer_at_predictions_only: BertPretrainer's option; None = as PretrainingTask decides
    (on with the fast kernels).
    The loss reads the kernels switch when the step is traced (its first call): call no other
    factory in between.
    """
    use_fast_kernels(fast_kernels)
    if last_layer_at_predictions_only is None:
        last_layer_at_predictions_only = fast_kernels

    def model_fn():
        pretrainer = BertPretrainer(
            build_encoder(cfg, dtype, fast_kernels),
            last_layer_at_predictions_only=last_layer_at_predictions_only,
        )
        pretrainer.build()
        return pretrainer

    runner = Runner(
        create_strategy("one_device"),
        model_fn,
        lambda: create_optimizer(1e-4, num_train_steps=1_000_000, num_warmup_steps=0),
        pretraining_loss,
        TrainingOptions(output_dir=tempfile.mkdtemp(prefix="runner_step_"), enable_xla=jit_compile),
        num_train_steps=1_000_000,
        loss_denominators_fn=pretraining_loss_denominators,
    )
    features = pretraining_features(batch)
    dataset = runner.strategy.distribute_datasets_from_function(
        lambda input_context: tf.data.Dataset.from_tensors(features).repeat()
    )
    iterator = iter(dataset)
    # The loop Runner.train calls between its checkpoints, here one step per call.
    train_loop = runner._train_loop_fn()
    one = tf.constant(1)

    def step():
        return train_loop(iterator, one)

    step.pretrainer = runner.model
    return step


def runner_step_fp32(cfg, batch):
    return make_runner_step(cfg, batch, FP32)


def runner_step_bf16(cfg, batch):
    return make_runner_step(cfg, batch, BF16)


def runner_step_fp32_plain(cfg, batch):
    return make_runner_step(cfg, batch, FP32, fast_kernels=False)


def runner_step_bf16_plain(cfg, batch):
    return make_runner_step(cfg, batch, BF16, fast_kernels=False)


def runner_step_fp32_xla(cfg, batch):
    return make_runner_step(cfg, batch, FP32, jit_compile=True)


def make_pretrain_step(cfg: dict, batch: dict, dtype: str = FP32, jit_compile: bool = False):
    """Returns step(): one full MLM+NSP optimizer step on `batch`; step() returns the loss.

    Loss and optimizer are the library's (official_bert.training): the original run_pretraining.py
    loss and the original AdamWeightDecay (weight decay 0.01 except LayerNorm and biases,
    warm-up + linear decay), after clipping the global gradient norm to 1.0. Dropout on. The loss
    is a float32 scalar tensor.
    """
    pretrainer = BertPretrainer(build_encoder(cfg, dtype))
    pretrainer.build()
    optimizer = create_optimizer(
        1e-4, num_train_steps=1_000_000, num_warmup_steps=0, clip_norm=None
    )
    variables = pretrainer.trainable_variables
    # Building the slots here keeps variable creation out of the traced step.
    optimizer.build(variables)

    features = pretraining_features(batch)

    @tf.function(jit_compile=jit_compile)
    def train_step():
        with tf.GradientTape() as tape:
            loss = pretraining_loss(pretrainer(features, training=True), features)
        gradients = tape.gradient(loss, variables)
        gradients, _ = tf.clip_by_global_norm(gradients, 1.0)
        optimizer.apply_gradients(zip(gradients, variables, strict=True))
        return loss

    def step():
        return train_step()

    step.pretrainer = pretrainer
    return step


def pretrain_step(cfg, batch):
    return make_pretrain_step(cfg, batch, FP32)


def pretrain_step_bf16(cfg, batch):
    return make_pretrain_step(cfg, batch, BF16)


def pretrain_step_xla(cfg, batch):
    return make_pretrain_step(cfg, batch, FP32, jit_compile=True)


def output_dtypes(outputs: dict) -> dict:
    """{name: dtype name} of a forward()'s outputs, e.g. {"sequence_output": "bfloat16"}."""
    return {name: value.dtype.name for name, value in outputs.items()}
