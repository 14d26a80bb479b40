"""Feature extraction (extract_features.py): contextual token features of every input line from a
BERT encoder, written as the original extract_features.py writes them."""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
from collections.abc import Iterable, Iterator

import numpy as np
import tensorflow as tf
from absl import logging

from official_bert.atomic_output import atomic_output
from official_bert.checkpoints import load_bert_weights
from official_bert.checkpoints.loading import find_bert_config, read_bert_config
from official_bert.config import check_vocab_matches_config
from official_bert.data.feature_extraction_inputs import (
    TokenFeatures,
    convert_text_examples,
    read_text_examples,
)
from official_bert.kernels import fast_kernels
from official_bert.models import BertEncoder
from official_bert.option_flags import option
from official_bert.scalar_mix_weights import load_scalar_mix
from official_bert.tokenization import FastWordpieceBertTokenizer, validate_case_matches_checkpoint

# The "index" of the mixed entry in the output when extracting with a ScalarMix.
SCALAR_MIX_INDEX = "scalar_mix"
# The original's --layers default: the last four layers.
DEFAULT_LAYERS = "-1,-2,-3,-4"


def parse_layer_indexes(layers: str, num_layers: int) -> list[int]:
    """ "-1,-2,-3,-4" -> [-1, -2, -3, -4], checked against the encoder's depth."""
    try:
        indexes = [int(part) for part in layers.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--layers must be comma-separated integers, got {layers!r}") from None
    if not indexes:
        raise ValueError("--layers is empty; expected e.g. -1,-2,-3,-4")
    for index in indexes:
        if not -num_layers <= index < num_layers:
            raise ValueError(
                f"--layers: layer {index} does not exist in an encoder with {num_layers} layers"
            )
    return indexes


def _batches(features: Iterable[TokenFeatures], batch_size: int) -> Iterator[list[TokenFeatures]]:
    iterator = iter(features)
    while batch := list(itertools.islice(iterator, batch_size)):
        yield batch


def extract_features(
    encoder,
    features: Iterable[TokenFeatures],
    layer_indexes: list[int] | None,
    output_file: str,
    batch_size: int = 32,
    scalar_mix=None,
) -> int:
    """Runs the encoder (dropout off) and writes one JSON line per example, in the original
    format: {"linex_index": id, "features": [{"token": t, "layers": [{"index": i,
    "values": [...6 decimals]}]}]}, for the real (unpadded) tokens.

    With `scalar_mix` (a built ScalarMix over all the encoder's layers; `layer_indexes` is then
    ignored), each token has one entry instead, {"index": "scalar_mix", "values": [...]}: the
    mix of every layer's output at that token.

    The file is written under a temporary name and renamed when complete. Returns the number of
    examples written.
    """
    if scalar_mix is not None:
        layer_indexes = [SCALAR_MIX_INDEX]

    @tf.function(reduce_retracing=True)
    def forward(inputs):
        outputs = encoder(inputs, training=False)
        layers = outputs["encoder_outputs"]
        if scalar_mix is not None:
            return [tf.cast(scalar_mix(layers), tf.float32)]
        return [tf.cast(layers[index], tf.float32) for index in layer_indexes]

    written = 0
    start = time.time()
    with atomic_output(output_file) as temporary, tf.io.gfile.GFile(temporary, "w") as writer:
        for batch in _batches(features, batch_size):
            real = len(batch)
            # Pad the last batch to full size so the traced function is reused.
            padded = batch + [batch[-1]] * (batch_size - real)
            inputs = {
                "input_word_ids": np.array([f.input_ids for f in padded], np.int32),
                "input_mask": np.array([f.input_mask for f in padded], np.int32),
                "input_type_ids": np.array([f.input_type_ids for f in padded], np.int32),
            }
            layer_values = [layer.numpy() for layer in forward(inputs)]
            for row, feature in enumerate(batch):
                tokens = []
                for position, token in enumerate(feature.tokens):
                    layers = [
                        {
                            "index": layer_index,
                            "values": [round(float(x), 6) for x in layer_values[j][row, position]],
                        }
                        for j, layer_index in enumerate(layer_indexes)
                    ]
                    tokens.append({"token": token, "layers": layers})
                writer.write(
                    json.dumps({"linex_index": feature.unique_id, "features": tokens}) + "\n"
                )
            written += real
            elapsed = time.time() - start
            logging.info(
                "extract_features: %d examples, %.1f examples/s", written, written / elapsed
            )
    return written


@dataclasses.dataclass(kw_only=True)
class FeatureExtractionOptions:
    """The settings of extract_features.py (the original's flags, then the TF2 ones). No
    training, so none of TrainingOptions': the encoder runs once over the input on the host."""

    # === The original flags ===
    input_file: str = option(help="Text file: one example per line, pairs as 'a ||| b'.")
    output_file: str = option(help="JSON-lines output file.")
    layers: str | None = option(
        None, help="Comma-separated encoder layers to output (default: -1,-2,-3,-4)."
    )
    bert_config_file: str | None = option(
        None,
        help="bert_config.json of the model (or an HF config.json). Default: the one beside "
        "init_checkpoint.",
    )
    max_seq_length: int = option(128, help="Maximum total input length in wordpieces.")
    init_checkpoint: str = option(help="Checkpoint to read: TF1, safetensors or ours.")
    vocab_file: str = option(help="vocab.txt the model was trained with.")
    do_lower_case: bool = option(True, help="Lower-case the input (True for uncased models).")
    batch_size: int = option(32, help="Batch size for predictions.")
    use_tpu: bool = option(
        False, help="Accepted for compatibility and ignored: features are computed on the host."
    )
    master: str | None = option(None, help="Accepted for compatibility (TF1 TPU master).")
    num_tpu_cores: int = option(8, help="Accepted for compatibility.")
    use_one_hot_embeddings: bool = option(False, help="Accepted for compatibility; no effect.")
    # === TF2 flags ===
    fast_kernels: bool = option(
        True,
        help="Take the speed paths of official_bert.kernels (same results; false: the plain "
        "Keras layers).",
    )
    checkpoint_format: str | None = option(
        None, choices=("tf1", "safetensors", "object"), help="Default: detected."
    )
    scalar_mix_weights: str | None = option(
        None,
        help="scalar_mix_weights.json of run_classifier.py --feature_mode=frozen_scalar_mix: "
        'output one entry per token, {"index": "scalar_mix", "values": ...}, the learned mix '
        "of all layers, instead of --layers.",
    )


def run_feature_extraction(options: FeatureExtractionOptions) -> int:
    """Reads input_file, runs the encoder of init_checkpoint (dropout off) and writes the
    features of every line to output_file in the original format (see extract_features).
    Returns the number of examples written.

    No runner and no driver: nothing trains and nothing is checkpointed; the encoder runs
    once, in order, on this host.
    """
    if options.use_tpu:
        logging.warning("--use_tpu is ignored by extract_features.py: features run on the host")
    if not tf.io.gfile.exists(options.input_file):
        raise FileNotFoundError(f"--input_file: input file not found: {options.input_file}")
    validate_case_matches_checkpoint(options.do_lower_case, options.init_checkpoint)
    config_file = options.bert_config_file or find_bert_config(options.init_checkpoint)
    if config_file is None:
        raise ValueError("--bert_config_file is required (none found beside init_checkpoint)")
    config = read_bert_config(config_file)
    check_vocab_matches_config(config, options.vocab_file, config_file)
    if options.max_seq_length > config.max_position_embeddings:
        raise ValueError(
            f"--max_seq_length={options.max_seq_length} is longer than max_position_embeddings "
            f"({config.max_position_embeddings}) in {config_file}"
        )
    scalar_mix = layer_indexes = None
    if options.scalar_mix_weights:
        if options.layers is not None:
            raise ValueError(
                "--layers and --scalar_mix_weights exclude each other: with --scalar_mix_weights "
                "the output holds the mix of all layers only"
            )
        scalar_mix = load_scalar_mix(options.scalar_mix_weights, config.num_hidden_layers)
    else:
        layer_indexes = parse_layer_indexes(
            options.layers or DEFAULT_LAYERS, config.num_hidden_layers
        )
    with fast_kernels(options.fast_kernels):
        encoder = BertEncoder.from_bert_config(config)
        encoder.build()
    load_bert_weights(encoder, options.init_checkpoint, checkpoint_format=options.checkpoint_format)
    tokenizer = FastWordpieceBertTokenizer(options.vocab_file, do_lower_case=options.do_lower_case)
    features = convert_text_examples(
        read_text_examples(options.input_file), tokenizer, options.max_seq_length
    )
    count = extract_features(
        encoder,
        features,
        layer_indexes,
        options.output_file,
        batch_size=options.batch_size,
        scalar_mix=scalar_mix,
    )
    logging.info("Wrote features of %d examples to %s", count, options.output_file)
    return count
