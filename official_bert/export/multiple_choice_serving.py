"""A SavedModel of a fine-tuned multiple-choice model that takes raw text.

As the classifier's (export/classifier_serving.py): tokenization and packing inside the graph,
so a client sends strings and gets each candidate's probability; loading needs `tensorflow` and
`tensorflow_text` only.
"""

from __future__ import annotations

import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.export.fused_encoder_model import FusedEncoderModel
from official_bert.export.saved_model_writing import save_atomically
from official_bert.export.serving_windows import with_equal_batch_sizes
from official_bert.models.bert_multiple_choice import mask_absent_choices


class MultipleChoiceServingModule(tf.Module):
    """`serving_default`: context [batch], question [batch] ("" for none) and choices [batch,
    num_choices] tf.string (an empty string for a slot without a candidate, so that questions
    with fewer candidates share a batch) ->

    {"probabilities": float32 [batch, num_choices] (0 for empty slots),
     "choice_ids": int32 [batch], the most probable candidate's index (-1 for a question whose
       slots are all empty)}.

    A slot is empty when its candidate has no wordpiece (an empty string, any whitespace: ASCII,
    U+3000 or other spaces, control characters), as the training readers refuse such a
    candidate. context, question and choices must have the same number of rows, and choices at
    least one column: a request that does not is an InvalidArgumentError that says so.

    Each candidate is packed as training packed it: [CLS] context [SEP] question candidate
    [SEP], cut to max_seq_length; with pad_to_longest (the default) each call packs to its
    longest pair, not to max_seq_length (the same results).
    """

    def __init__(
        self,
        model,
        packer: BertInputPacker,
        encoder_dtype: str | None = None,
        name: str | None = None,
        pad_to_longest: bool = True,
    ):
        super().__init__(name=name)
        self.packer = packer
        self.pad_to_longest = pad_to_longest
        if encoder_dtype is None:
            self.model = model
            self._row_scores = lambda inputs: model.row_scores(inputs, training=False)
        else:
            self.model = FusedEncoderModel(model, encoder_dtype)
            self._row_scores = lambda inputs: tf.reshape(self.model(inputs), [-1])

    def outputs(self, context, question, choices) -> dict[str, tf.Tensor]:
        context, question = with_equal_batch_sizes(context, question, "context", "question")
        checks = [
            tf.debugging.assert_equal(
                tf.shape(choices)[0],
                tf.shape(context)[0],
                message="choices must have a row for each context",
            ),
            tf.debugging.assert_greater(
                tf.shape(choices)[1], 0, message="choices must hold at least one column"
            ),
        ]
        with tf.control_dependencies(checks):
            choices = tf.identity(choices)
        shape = tf.shape(choices)
        flat_choices = tf.reshape(choices, [-1])
        flat_context = tf.repeat(context, shape[1])
        flat_question = tf.repeat(question, shape[1])
        second = tf.strings.strip(tf.strings.join([flat_question, flat_choices], separator=" "))
        inputs = self.packer(flat_context, second, pad_to_longest=self.pad_to_longest)
        logits = tf.reshape(tf.cast(self._row_scores(inputs), tf.float32), shape)
        pieces = self.packer.tokenizer.tokenize(flat_choices).merge_dims(1, -1)
        present = tf.reshape(pieces.row_lengths() > 0, shape)
        logits = mask_absent_choices(logits, present)
        any_present = tf.reduce_any(present, axis=-1)
        probabilities = tf.nn.softmax(logits, axis=-1)
        return {
            "probabilities": tf.where(present, probabilities, tf.zeros_like(probabilities)),
            "choice_ids": tf.where(
                any_present, tf.argmax(logits, axis=-1, output_type=tf.int32), -1
            ),
        }

    def signature(self):
        @tf.function(
            input_signature=[
                tf.TensorSpec([None], tf.string),
                tf.TensorSpec([None], tf.string),
                tf.TensorSpec([None, None], tf.string),
            ]
        )
        def serve(context, question, choices):
            return self.outputs(context, question, choices)

        return serve


def export_multiple_choice_serving_model(
    model,
    packer: BertInputPacker,
    export_dir: str,
    encoder_dtype: str | None = None,
    pad_to_longest: bool = True,
) -> str:
    """Writes the SavedModel to `export_dir` (under a temporary name, renamed when complete).

    Args:
      model: a built BertMultipleChoice.
      packer: the BertInputPacker the model was fine-tuned with (same vocab, casing, length).
      encoder_dtype: None serves the Keras model as it is; "float32" or "bfloat16" serves its
        encoder as FusedInferenceEncoder with weights in that dtype (FusedEncoderModel).
      pad_to_longest: pack each call to its longest pair (True) or to max_seq_length.

    Returns:
      export_dir.
    """
    module = MultipleChoiceServingModule(
        model, packer, encoder_dtype=encoder_dtype, pad_to_longest=pad_to_longest
    )
    save_atomically(
        module, export_dir, signatures={"serving_default": module.signature()}, overwrite=True
    )
    return export_dir
