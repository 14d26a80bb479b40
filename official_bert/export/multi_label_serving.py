"""A raw-text SavedModel of a fine-tuned multi-label classifier: strings in, each label's
probability and the predicted label set out, decided with the per-label thresholds tuned on dev.

As the single-label serving model (classifier_serving.py), tokenization is inside the graph and
loading needs only `tensorflow` and `tensorflow_text`. The thresholds are constants of the
graph, so a client cannot apply other ones by mistake; they are also written, with the label
names, to `assets.extra/label_thresholds.json` for people and tools to read.
"""

from __future__ import annotations

import json

import numpy as np
import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.export.classifier_serving import ClassifierServingModule
from official_bert.export.fused_encoder_model import FusedEncoderModel
from official_bert.export.saved_model_writing import save_atomically


class MultiLabelServingModule(ClassifierServingModule):
    """`serving_default`: text_a (and text_b for pair tasks) [batch] tf.string ->

    {"probabilities": float32 [batch, num_labels], each label's sigmoid;
     "label_indicators": int32 [batch, num_labels], 1 where the probability reaches the
       label's threshold;
     "labels": tf.string [batch], the predicted labels' names in label order joined by
       label_separator ("" for an example with none)}.
    """

    def __init__(
        self,
        model,
        packer: BertInputPacker,
        labels: list[str],
        thresholds: np.ndarray,
        label_separator: str,
        takes_pairs: bool,
        name: str | None = None,
    ):
        super().__init__(model, packer, labels, takes_pairs, name=name)
        if len(thresholds) != len(labels):
            raise ValueError(f"{len(thresholds)} thresholds for {len(labels)} labels")
        self.thresholds = tf.constant(np.asarray(thresholds, np.float32))
        self.label_separator = label_separator

    def outputs(self, inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        logits = tf.cast(self.model(inputs, training=False), tf.float32)
        probabilities = tf.sigmoid(logits)
        chosen = probabilities >= self.thresholds
        names = tf.broadcast_to(self.label_names, tf.shape(chosen))
        return {
            "probabilities": probabilities,
            "label_indicators": tf.cast(chosen, tf.int32),
            "labels": tf.strings.reduce_join(
                tf.ragged.boolean_mask(names, chosen), axis=-1, separator=self.label_separator
            ),
        }


def export_multi_label_serving_model(
    model,
    packer: BertInputPacker,
    labels: list[str],
    thresholds: np.ndarray,
    label_separator: str,
    takes_pairs: bool,
    export_dir: str,
    encoder_dtype: str | None = None,
) -> str:
    """Writes the SavedModel to `export_dir` (under a temporary name, renamed when complete),
    with `assets.extra/labels.txt` and `assets.extra/label_thresholds.json` ({"labels",
    "thresholds", "label_separator"}) beside it.

    Args:
      model: a built BertClassifier with one logit per label ([batch, num_labels]).
      packer: the BertInputPacker the model was fine-tuned with.
      labels: the label names, in the order of the model's logits.
      thresholds: float [num_labels], the decision threshold of each label's probability.
      label_separator: what joins the names in the "labels" output.
      takes_pairs: True for (text_a, text_b) tasks.
      encoder_dtype: None serves the Keras model as it is; "float32" or "bfloat16" serves its
        encoder as FusedInferenceEncoder with weights in that dtype (FusedEncoderModel).

    Returns:
      export_dir.
    """
    if encoder_dtype is not None:
        model = FusedEncoderModel(model, encoder_dtype)
    module = MultiLabelServingModule(
        model, packer, labels, thresholds, label_separator, takes_pairs
    )
    settings = {
        "labels": list(labels),
        "thresholds": [float(value) for value in thresholds],
        "label_separator": label_separator,
    }
    save_atomically(
        module,
        export_dir,
        signatures={"serving_default": module.signature()},
        extra_files={
            "assets.extra/labels.txt": "\n".join(labels) + "\n",
            "assets.extra/label_thresholds.json": json.dumps(settings, indent=2) + "\n",
        },
        overwrite=True,
    )
    return export_dir
