"""A SavedModel of a fine-tuned classifier that takes raw text (google-research/bert#146).

Tokenization and packing are inside the graph (tensorflow_text ops), so a client sends strings
and gets probabilities: no hand-written input function, no vocab.txt on the serving side. Loading
needs only `tensorflow` and `tensorflow_text` (for its ops), not this package or Keras.
"""

from __future__ import annotations

import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.export.fused_encoder_model import FusedEncoderModel
from official_bert.export.saved_model_writing import save_atomically


class ClassifierServingModule(tf.Module):
    """`serving_default`: text_a (and text_b for pair tasks) [batch] tf.string ->

    classification: {"probabilities": float32 [batch, num_labels],
                     "label_ids": int32 [batch], "labels": tf.string [batch]};
    regression:     {"scores": float32 [batch]}.

    With pad_to_longest (the default) each call packs to its batch's longest text
    (BertInputPacker's pad_to_longest), not to max_seq_length: the same results, and short
    texts cost short rows; without it every row is max_seq_length long (fixed shapes).
    """

    def __init__(
        self,
        model,
        packer: BertInputPacker,
        labels: list[str] | None,
        takes_pairs: bool,
        name: str | None = None,
        pad_to_longest: bool = True,
    ):
        super().__init__(name=name)
        self.model = model
        self.packer = packer
        self.takes_pairs = takes_pairs
        self.pad_to_longest = pad_to_longest
        self.is_regression = labels is None
        self.label_names = tf.constant(labels or [""], tf.string)

    def outputs(self, inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        logits = tf.cast(self.model(inputs, training=False), tf.float32)
        if self.is_regression:
            return {"scores": tf.reshape(logits, [-1])}
        label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_ids": label_ids,
            "labels": tf.gather(self.label_names, label_ids),
        }

    def signature(self):
        text = tf.TensorSpec([None], tf.string)
        if self.takes_pairs:

            @tf.function(input_signature=[text, text])
            def serve(text_a, text_b):
                return self.outputs(self.packer(text_a, text_b, pad_to_longest=self.pad_to_longest))

        else:

            @tf.function(input_signature=[text])
            def serve(text_a):
                return self.outputs(self.packer(text_a, pad_to_longest=self.pad_to_longest))

        return serve


def export_classifier_serving_model(
    model,
    packer: BertInputPacker,
    labels: list[str] | None,
    takes_pairs: bool,
    export_dir: str,
    encoder_dtype: str | None = None,
    pad_to_longest: bool = True,
) -> str:
    """Writes the SavedModel to `export_dir` (under a temporary name, renamed when complete).

    Args:
      model: a built BertClassifier (logits [batch, num_labels]; 1 score for regression).
      packer: the BertInputPacker the model was fine-tuned with (same vocab, casing, length).
      labels: label names by id (None for regression); `labels.txt` is written beside.
      takes_pairs: True for (text_a, text_b) tasks, False for one text.
      encoder_dtype: None serves the Keras model as it is; "float32" or "bfloat16" serves its
        encoder as FusedInferenceEncoder with weights in that dtype (FusedEncoderModel).
      pad_to_longest: pack each call to its longest text (True) or to max_seq_length.

    Returns:
      export_dir.
    """
    if encoder_dtype is not None:
        model = FusedEncoderModel(model, encoder_dtype)
    module = ClassifierServingModule(
        model, packer, labels, takes_pairs, pad_to_longest=pad_to_longest
    )
    serve = module.signature()
    extra_files = {}
    if labels is not None:
        extra_files["assets.extra/labels.txt"] = "\n".join(labels) + "\n"
    save_atomically(
        module,
        export_dir,
        signatures={"serving_default": serve},
        extra_files=extra_files,
        overwrite=True,
    )
    return export_dir
