"""The text preprocessor of a BERT encoder as a TF Hub SavedModel.

It follows the TF Hub common API for BERT preprocessors (the Model Garden's
`bert_en_uncased_preprocess`), built on this project's `FastWordpieceBertTokenizer` (the ids of
the original `FullTokenizer`) and `BertInputPacker` (the original truncation and packing):

  import tensorflow_text  # registers the ops the SavedModel uses (tensorflow/hub#705)
  preprocessor = tf.saved_model.load(path)
  preprocessor(strings)               # tf.string [batch] -> {"input_word_ids", "input_mask",
                                      #   "input_type_ids"}: int32 [batch, default_seq_length]
  preprocessor.tokenize(strings)      # -> int32 RaggedTensor [batch, (words), (pieces)]
  preprocessor.bert_pack_inputs([tokens_a, tokens_b], seq_length=64)
                                      # 1 or 2 segments, round-robin truncation as the original,
                                      # a [SEP] after each segment as TF Hub's (the original
                                      # left out B's where B was empty)
  preprocessor.get_special_tokens_dict()  # vocab_size, start_of_sequence_id, end_of_segment_id,
                                          # padding_id, mask_id: int32 scalars
  preprocessor.tokenize_with_offsets(strings)
                                      # only when exported with tokenize_with_offsets=True:
                                      # (ids, start_offsets, limit_offsets), each a RaggedTensor
                                      # [batch, (words), (pieces)]; ids int32 as .tokenize, the
                                      # offsets int64 bytes of each input string (piece k came
                                      # from strings[i][start:limit]), as tensorflow_text's
                                      # TokenizerWithOffsets
  preprocessor.vocab_file             # asset: vocab.txt;  preprocessor.do_lower_case: bool

Loading needs `import tensorflow_text` first (otherwise "Op type not registered" names one of
its ops, such as 'NormalizeUTF8'); `load_preprocessor` does it.
"""

from __future__ import annotations

import tensorflow as tf

from official_bert.data.bert_input_packer import BertInputPacker
from official_bert.export.saved_model_writing import save_atomically, traced_for_saving
from official_bert.tokenization import FastWordpieceBertTokenizer


def build_preprocessor_module(
    vocab_file: str,
    do_lower_case: bool,
    default_seq_length: int = 128,
    tokenize_with_offsets: bool = False,
    preserve_unused_tokens: bool = False,
) -> tf.Module:
    """The exportable preprocessor object; see the module docstring for what it offers.

    `preserve_unused_tokens`: the original's --preserve_unused_tokens (each `[unusedN]` of the
    vocabulary written as a whitespace-separated word stays one piece), for models fine-tuned
    with it.
    """
    tokenizer = FastWordpieceBertTokenizer(
        vocab_file, do_lower_case=do_lower_case, preserve_unused_tokens=preserve_unused_tokens
    )
    # TF Hub's packing (a [SEP] per segment even where one is empty): models are fine-tuned
    # behind TF Hub preprocessors that pack so.
    packer = BertInputPacker(tokenizer, default_seq_length, tf_hub_packing=True)
    root = tf.__internal__.tracking.AutoTrackable()
    root.packer = packer
    root.vocab_file = tf.saved_model.Asset(vocab_file)
    root.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")
    special_tokens = {
        "vocab_size": tokenizer.vocab_size,
        "start_of_sequence_id": tokenizer.cls_id,
        "end_of_segment_id": tokenizer.sep_id,
        "padding_id": tokenizer.pad_id,
        "mask_id": tokenizer.mask_id,
    }

    # The argument names serving_default's input: "sentences", as in the Model Garden's
    # preprocessors (TF Hub's bert_*_preprocess), so that their serving clients work unchanged.
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def preprocess(sentences):
        return packer(sentences)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(strings):
        return tokenizer.tokenize_words(strings)

    @tf.function
    def bert_pack_inputs(inputs, seq_length=default_seq_length):
        return packer.pack_ids(list(inputs), seq_length)

    word_pieces = tf.RaggedTensorSpec([None, None, None], tf.int32, ragged_rank=2)
    pieces = tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1)
    # The spec named as the argument: the save asks for each trace again with the specs it
    # recorded, which carry the argument's name, and a spec of another name is another trace.
    seq_length = tf.TensorSpec([], tf.int32, name="seq_length")
    with traced_for_saving():
        for num_segments in (1, 2):
            for spec in (word_pieces, pieces):
                bert_pack_inputs.get_concrete_function([spec] * num_segments, seq_length=seq_length)

    @tf.function(input_signature=[])
    def get_special_tokens_dict():
        return {name: tf.constant(value, tf.int32) for name, value in special_tokens.items()}

    root.__call__ = preprocess
    root.tokenize = tokenize
    root.bert_pack_inputs = bert_pack_inputs
    root.get_special_tokens_dict = get_special_tokens_dict
    if tokenize_with_offsets:

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def tokenize_with_offsets_fn(strings):
            return tokenizer.tokenize_words_with_offsets(strings)

        root.tokenize_with_offsets = tokenize_with_offsets_fn
    return root


def export_bert_preprocessor(
    export_path: str,
    vocab_file: str,
    do_lower_case: bool,
    default_seq_length: int = 128,
    overwrite: bool = False,
    tokenize_with_offsets: bool = False,
    preserve_unused_tokens: bool = False,
) -> str:
    """Saves the preprocessor at `export_path` (temporary name, then rename); returns the path.

    `serving_default` maps `sentences` tf.string [batch] to the three int32 tensors;
    `tokenize_with_offsets` adds the method of that name; `preserve_unused_tokens` as for
    `build_preprocessor_module`.
    """
    root = build_preprocessor_module(
        vocab_file, do_lower_case, default_seq_length, tokenize_with_offsets, preserve_unused_tokens
    )
    with traced_for_saving():
        serving_default = root.__call__.get_concrete_function()
    return save_atomically(
        root, export_path, signatures={"serving_default": serving_default}, overwrite=overwrite
    )


def load_preprocessor(path: str):
    """`tf.saved_model.load` after registering tensorflow_text's ops."""
    import tensorflow_text  # noqa: F401  (registers NormalizeUTF8 and the other text ops)

    return tf.saved_model.load(path)
