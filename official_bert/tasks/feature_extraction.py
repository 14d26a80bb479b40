"""Contextual token features from a BERT encoder, written as the original extract_features.py."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterable, Iterator

import numpy as np
import tensorflow as tf
from absl import logging

from official_bert.atomic_output import atomic_output
from official_bert.data.feature_extraction_inputs import TokenFeatures

# The "index" of the mixed entry in the output when extracting with a ScalarMix.
SCALAR_MIX_INDEX = "scalar_mix"


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
