"""A SavedModel of a fine-tuned classifier that takes raw text (google-research/bert#146).

Tokenization and packing are inside the graph (tensorflow_text ops), so a client sends strings
and gets probabilities: no hand-written input function, no vocab.txt on the serving side. Loading
needs only `tensorflow` and `tensorflow_text` (for its ops), not this package or Keras.

A long text is truncated to max_seq_length as the original did, or, exported with the run's
doc_stride (run_classifier.py --doc_stride), predicted as the predict path predicts it
(data/classification/features.py encode_classifier_windows, tasks/window_aggregation.py): the
text in overlapping windows of wordpieces starting doc_stride apart (of a pair, text_a whole in
every window and text_b windowed; export/serving_windows.py), its windows' logits combined with
the run's window_aggregation, so that the served probabilities are those of test_results.tsv.
"""

from __future__ import annotations

import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.export.fused_encoder_model import FusedEncoderModel
from official_bert.export.saved_model_writing import save_atomically
from official_bert.export.serving_windows import (
    combine_windows,
    slide_windows,
    with_equal_batch_sizes,
)
from official_bert.tasks.window_aggregation import WINDOW_AGGREGATIONS


class ClassifierServingModule(tf.Module):
    """`serving_default`: text_a (and text_b for pair tasks) [batch] tf.string ->

    classification: {"probabilities": float32 [batch, num_labels],
                     "label_ids": int32 [batch], "labels": tf.string [batch]};
    regression:     {"scores": float32 [batch]}.

    With pad_to_longest (the default) each call packs to its batch's longest text
    (BertInputPacker's pad_to_longest), not to max_seq_length: the same results, and short
    texts cost short rows; without it every row is max_seq_length long (fixed shapes).

    With a doc_stride each text is predicted as its windows (see the module docstring), all
    windows of the batch through the model as one batch, and its windows' logits combined by
    `window_aggregation` ("mean", "max" or "first", WINDOW_AGGREGATIONS) before the softmax
    (or as the score, for regression). A pair whose text_a leaves no room for text_b in
    max_seq_length fails the call (InvalidArgumentError), as the predict path refuses it.
    """

    def __init__(
        self,
        model,
        packer: BertInputPacker,
        labels: list[str] | None,
        takes_pairs: bool,
        name: str | None = None,
        pad_to_longest: bool = True,
        doc_stride: int | None = None,
        window_aggregation: str = "mean",
    ):
        super().__init__(name=name)
        if doc_stride is not None and doc_stride < 1:
            raise ValueError(f"doc_stride must be at least 1, got {doc_stride}")
        if window_aggregation not in WINDOW_AGGREGATIONS:
            raise ValueError(
                f"window_aggregation must be one of {list(WINDOW_AGGREGATIONS)}, got "
                f"{window_aggregation!r}"
            )
        self.model = model
        self.packer = packer
        self.takes_pairs = takes_pairs
        self.pad_to_longest = pad_to_longest
        self.doc_stride = doc_stride
        self.window_aggregation = window_aggregation
        self.is_regression = labels is None
        self.label_names = tf.constant(labels or [""], tf.string)

    def outputs(
        self, inputs: dict[str, tf.Tensor], window_counts: tf.Tensor | None = None
    ) -> dict[str, tf.Tensor]:
        """The outputs of `serving_default` for packed `inputs` (int32 [rows, length]): a row
        per text, or with `window_counts` (int64 [texts], each text's windows, its rows in
        order) a row per window, combined per text."""
        logits = tf.cast(self.model(inputs, training=False), tf.float32)
        if window_counts is not None:
            logits = combine_windows(logits, window_counts, self.window_aggregation)
        if self.is_regression:
            return {"scores": tf.reshape(logits, [-1])}
        label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_ids": label_ids,
            "labels": tf.gather(self.label_names, label_ids),
        }

    @tf.autograph.experimental.do_not_convert
    def classify(self, text_a: tf.Tensor, text_b: tf.Tensor | None = None) -> dict[str, tf.Tensor]:
        """The outputs of `serving_default` (see the class) for [batch] tf.string texts."""
        if self.doc_stride is None:
            return self.outputs(self.packer(text_a, text_b, pad_to_longest=self.pad_to_longest))
        inputs, counts = self._windows(text_a, text_b)
        return self.outputs(inputs, counts)

    def _windows(
        self, text_a: tf.Tensor, text_b: tf.Tensor | None
    ) -> tuple[dict[str, tf.Tensor], tf.Tensor]:
        """The windows of encode_classifier_windows (data/document_windows.py text_windows):
        a single text's pieces in windows of max_seq_length - 2; of a pair, text_a whole in
        every window and text_b's pieces in windows of max_seq_length - 3 - len(text_a); a
        text that fits (or has no pieces) is one window.

        Returns: (the windows packed as BertInputPacker.pack_ids, int32 [windows, length];
          int64 [batch], each text's windows).
        """
        tokenizer, max_seq_length = self.packer.tokenizer, self.packer.max_seq_length
        if text_b is None:
            pieces = tokenizer.tokenize(text_a)
            room = tf.fill([pieces.nrows()], tf.constant(max_seq_length - 2, tf.int64))
        else:
            text_a, text_b = with_equal_batch_sizes(text_a, text_b, "text_a", "text_b")
            pieces_a = tokenizer.tokenize(text_a)
            pieces = tokenizer.tokenize(text_b)
            room = max_seq_length - 3 - pieces_a.row_lengths()
            fits = tf.debugging.assert_greater_equal(
                tf.reduce_min(tf.concat([room, [1]], 0)),
                tf.constant(1, tf.int64),
                message="with a doc_stride the first text of a pair is repeated in every "
                f"window, but a text_a leaves no room for its text_b in max_seq_length="
                f"{max_seq_length}; shorten it",
            )
            with tf.control_dependencies([fits]):
                room = tf.identity(room)
        windows = slide_windows(pieces, room, self.doc_stride, empty_text_window=True)
        segments = [windows.pieces]
        if text_b is not None:
            segments.insert(0, tf.gather(pieces_a, windows.text))
        inputs = self.packer.pack_ids(segments, pad_to_longest=self.pad_to_longest)
        return inputs, windows.counts

    def signature(self):
        text = tf.TensorSpec([None], tf.string)
        if self.takes_pairs:

            @tf.function(input_signature=[text, text])
            def serve(text_a, text_b):
                return self.classify(text_a, text_b)

        else:

            @tf.function(input_signature=[text])
            def serve(text_a):
                return self.classify(text_a)

        return serve


def export_classifier_serving_model(
    model,
    packer: BertInputPacker,
    labels: list[str] | None,
    takes_pairs: bool,
    export_dir: str,
    encoder_dtype: str | None = None,
    pad_to_longest: bool = True,
    doc_stride: int | None = None,
    window_aggregation: str = "mean",
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
      doc_stride: the run's --doc_stride: None truncates a long text to max_seq_length;
        otherwise its windows start doc_stride wordpieces apart and their logits combine by
        window_aggregation (the run's --window_aggregation), as its test_results.tsv.

    Returns:
      export_dir.
    """
    if encoder_dtype is not None:
        model = FusedEncoderModel(model, encoder_dtype)
    module = ClassifierServingModule(
        model,
        packer,
        labels,
        takes_pairs,
        pad_to_longest=pad_to_longest,
        doc_stride=doc_stride,
        window_aggregation=window_aggregation,
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
