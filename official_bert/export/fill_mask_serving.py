"""A SavedModel of a pre-trained BERT with its masked-LM head that fills in "[MASK]"s in raw text.

The text is cut at each literal "[MASK]"; the pieces between are tokenized as any text (so an
uncased model's lower-casing never touches the marker) and joined with the [MASK] id, then
packed as one segment ([CLS] text [SEP], cut to max_seq_length). The masked-LM head scores every
[MASK] left after the cut. Loading needs only `tensorflow` and `tensorflow_text`.
"""

from __future__ import annotations

import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.export.saved_model_writing import save_atomically

MASK_TOKEN = "[MASK]"


class FillMaskServingModule(tf.Module):
    """`serving_default`: text [batch] tf.string, each with one or more "[MASK]" ->

    tokens: tf.string [batch, most masks, top_k], the top_k likeliest vocabulary tokens of
      each [MASK] in order, likeliest first (ties: the lower id first); "" past the last mask;
    scores: float32 [batch, most masks, top_k], their probabilities (softmax over the
      vocabulary); 0 past the last mask.
    mask_positions: int32 [batch, most masks], each [MASK]'s position in the packed row
      (-1 past the last).
    """

    def __init__(self, pretrainer, packer: BertInputPacker, top_k: int, name: str | None = None):
        super().__init__(name=name)
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        self.pretrainer = pretrainer
        self.packer = packer
        self.top_k = top_k
        self.token_names = tf.constant(packer.tokenizer.tokens_by_id.tolist(), tf.string)

    @tf.autograph.experimental.do_not_convert
    def fill(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        tokenizer = self.packer.tokenizer
        mask_id = tokenizer.mask_id
        parts = tf.strings.split(text, sep=MASK_TOKEN)  # [batch, (masks + 1)]
        pieces = tokenizer.tokenize(parts.flat_values)  # [parts, (pieces)]
        masks = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.size(parts.flat_values)], tf.constant(mask_id, pieces.dtype)),
            tf.ones_like(pieces.row_lengths()),
        )
        # Every part followed by [MASK], then the last one (after the last part) dropped.
        ids = parts.with_flat_values(tf.concat([pieces, masks], axis=1))
        ids = ids.merge_dims(1, 2)[:, :-1]
        inputs = self.packer.pack_ids([ids], pad_to_longest=True)
        is_mask = tf.logical_and(
            tf.equal(inputs["input_word_ids"], mask_id), tf.cast(inputs["input_mask"], tf.bool)
        )
        positions = tf.ragged.boolean_mask(
            tf.broadcast_to(
                tf.range(tf.shape(is_mask)[1], dtype=tf.int32)[None, :], tf.shape(is_mask)
            ),
            is_mask,
        )
        inputs["masked_lm_positions"] = positions.to_tensor(default_value=0)
        logits = tf.cast(self.pretrainer(inputs, training=False)["mlm_logits"], tf.float32)
        # An embedding table padded past the vocab (config.check_vocab_matches_config) has rows
        # that are no token: not candidates (and past the end of token_names).
        logits = logits[:, :, : len(tokenizer.tokens_by_id)]
        scores, token_ids = tf.math.top_k(tf.nn.softmax(logits, axis=-1), self.top_k)
        found = tf.sequence_mask(positions.row_lengths(), tf.shape(logits)[1])[:, :, None]
        return {
            "tokens": tf.where(found, tf.gather(self.token_names, token_ids), ""),
            "scores": tf.where(found, scores, 0.0),
            "mask_positions": positions.to_tensor(default_value=-1),
        }

    def signature(self):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def serve(text):
            return self.fill(text)

        return serve


def export_fill_mask_serving_model(
    pretrainer, packer: BertInputPacker, top_k: int, export_dir: str, overwrite: bool = True
) -> str:
    """Writes the SavedModel to `export_dir` (under a temporary name, renamed when complete).

    Args:
      pretrainer: a built BertPretrainer with its masked-LM head (`mlm_logits` float
        [batch, num_predictions, vocab_size] at `masked_lm_positions`).
      packer: a BertInputPacker with the model's vocab, casing and the longest text to serve.
      top_k: tokens returned per [MASK].
      overwrite: replace an existing export_dir (else it is an error).

    Returns:
      export_dir.
    """
    module = FillMaskServingModule(pretrainer, packer, top_k)
    return save_atomically(
        module, export_dir, signatures={"serving_default": module.signature()}, overwrite=overwrite
    )
