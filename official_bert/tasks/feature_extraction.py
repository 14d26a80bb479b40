"""Feature extraction (extract_features.py): contextual token features of every input line from a
BERT encoder, written as the original extract_features.py writes them; or, with --pooling, one
sentence vector per line (sentence_pooling.py) as JSON lines or a float32 .npy matrix.

Lines longer than max_seq_length are truncated as by the original, or with --doc_stride cut into
overlapping windows whose max-context tokens make up the whole line
(data/feature_extraction_inputs.py)."""

from __future__ import annotations

import dataclasses
import json
import time
import weakref
from collections.abc import Iterable

import keras
import tensorflow as tf
from absl import logging

from official_bert.atomic_output import atomic_output
from official_bert.checkpoints import CHECKPOINT_FORMATS, load_bert_weights
from official_bert.checkpoints.checkpoint_url import resolve_checkpoint_url
from official_bert.checkpoints.loading import (
    find_bert_config,
    find_lower_case,
    find_vocab_file,
    read_bert_config,
)
from official_bert.checkpoints.variable_table import pooled_output_unused
from official_bert.config import check_vocab_matches_config
from official_bert.data.feature_extraction_inputs import (
    TokenFeatures,
    convert_text_examples,
    read_text_examples,
)
from official_bert.file_system import check_local_output_file
from official_bert.kernels import FusedInferenceEncoder, fast_kernels
from official_bert.models import BertEncoder
from official_bert.npy_row_writer import NpyRowWriter
from official_bert.option_flags import option
from official_bert.scalar_mix_weights import load_scalar_mix
from official_bert.tasks.line_batches import length_sort_window, lines_in_order
from official_bert.tasks.sentence_pooling import POOLINGS, pool_tokens
from official_bert.tokenization import FastWordpieceBertTokenizer, validate_case_matches_checkpoint
from official_bert.training.training_options import check_positive_options

# The "index" of the mixed entry in the output when extracting with a ScalarMix.
SCALAR_MIX_INDEX = "scalar_mix"


def default_layers(num_layers: int) -> str:
    """The original's default, the last four layers; all of them in a shallower encoder (the
    2- and 3-layer BERTs of the 2020 release), where the original's default fails."""
    return ",".join(str(-k) for k in range(1, min(4, num_layers) + 1))


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


def extract_features(
    encoder,
    features: Iterable[TokenFeatures],
    layer_indexes: list[int] | None,
    output_file: str,
    batch_size: int = 32,
    scalar_mix=None,
    sort_window: int = 0,
) -> int:
    """Runs the encoder (dropout off) and writes one JSON line per example, in the original
    format: {"linex_index": id, "features": [{"token": t, "layers": [{"index": i,
    "values": [...6 decimals]}]}]}, for the real (unpadded) tokens (of the whole line when the
    features are windows).

    With `scalar_mix` (a built ScalarMix over all the encoder's layers; `layer_indexes` is then
    ignored), each token has one entry instead, {"index": "scalar_mix", "values": [...]}: the
    mix of every layer's output at that token.

    Batches are cut to their longest line (line_batches.line_outputs' trim_padding): the same
    values to float rounding, faster for lines shorter than max_seq_length. With `sort_window`
    > 0, the lines run longest first within windows of that many lines
    (line_batches.length_sorted_line_outputs; the file is still written in input order): the
    same values to float rounding, faster on lines of mixed lengths.

    The file is written under a temporary name and renamed when complete. Returns the number of
    examples written.
    """
    if scalar_mix is not None:
        layer_indexes = [SCALAR_MIX_INDEX]
    forward = _forward_function(encoder, layer_indexes, scalar_mix)
    written = 0
    start = time.time()
    with atomic_output(output_file) as temporary, tf.io.gfile.GFile(temporary, "w") as writer:
        lines = lines_in_order(forward, features, batch_size, sort_window)
        for unique_id, line_tokens, layer_values in lines:
            tokens = []
            for position, token in enumerate(line_tokens):
                layers = [
                    {
                        "index": layer_index,
                        "values": [round(float(x), 6) for x in layer_values[j][position]],
                    }
                    for j, layer_index in enumerate(layer_indexes)
                ]
                tokens.append({"token": token, "layers": layers})
            writer.write(json.dumps({"linex_index": unique_id, "features": tokens}) + "\n")
            written += 1
            if written % batch_size == 0:
                _log_progress(written, start)
    _log_progress(written, start)
    return written


def extract_sentence_embeddings(
    encoder,
    features: Iterable[TokenFeatures],
    output_file: str,
    pooling: str,
    num_lines: int | None = None,
    output_format: str = "jsonl",
    normalize: bool = False,
    batch_size: int = 32,
    scalar_mix=None,
    sort_window: int = 0,
) -> int:
    """Runs the encoder (dropout off) and writes one vector per input line (see
    sentence_pooling.pool_tokens: `pooling` of the last layer, or of `scalar_mix` for
    "scalar_mix"; L2-normalized with `normalize`).

    output_format "jsonl": a line {"linex_index": id, "embedding": [floats]} per input line
    (full float32 precision). "npy": a float32 [num_lines, hidden_size] matrix, row i the line
    i; `num_lines` is required (the header is written first, so nothing is held in memory).
    Batches are cut to their longest line (line_batches.line_outputs' trim_padding), and with
    `sort_window` run longest line first within windows of that many lines (as
    extract_features): the vectors are the same to float rounding, faster.

    Written under a temporary name and renamed when complete. Returns the number of lines.
    """
    if (pooling == "scalar_mix") != (scalar_mix is not None):
        raise ValueError("pooling 'scalar_mix' needs a ScalarMix, and only it takes one")
    forward = _forward_function(encoder, [-1], scalar_mix)
    written = 0
    start = time.time()
    with atomic_output(output_file) as temporary:
        if output_format == "npy":
            if num_lines is None:
                raise ValueError("output_format 'npy' needs num_lines (for the header)")
            writer = NpyRowWriter(temporary, num_lines, encoder.hidden_size)
        elif output_format == "jsonl":
            writer = tf.io.gfile.GFile(temporary, "w")
        else:
            raise ValueError(f"output_format must be jsonl or npy, got {output_format!r}")
        with writer:
            lines = lines_in_order(forward, features, batch_size, sort_window)
            for unique_id, _, (vectors,) in lines:
                vector = pool_tokens(vectors, pooling, normalize)
                if output_format == "npy":
                    writer.write(vector)
                else:
                    values = [float(x) for x in vector]
                    writer.write(json.dumps({"linex_index": unique_id, "embedding": values}))
                    writer.write("\n")
                written += 1
                if written % (batch_size * 100) == 0:
                    _log_progress(written, start)
    _log_progress(written, start)
    return written


def _forward_function(encoder, layer_indexes, scalar_mix):
    """A tf.function: encoder inputs -> [the float32 [batch, seq_length, hidden_size] outputs
    of `layer_indexes`], or [the scalar mix of all layers] when `scalar_mix` is given.

    One per encoder and choice of outputs (_FORWARD_FUNCTIONS), so that a process extracting
    several files with one encoder traces it once. Any other callable (a function wrapping an
    encoder) gets a new one each time."""
    if not isinstance(encoder, (tf.Module, keras.layers.Layer)):
        return _traced_forward(lambda: encoder, layer_indexes, scalar_mix)
    key = (None if layer_indexes is None else tuple(layer_indexes), scalar_mix)
    functions = _FORWARD_FUNCTIONS.setdefault(encoder, {})
    if key not in functions:
        functions[key] = _traced_forward(weakref.ref(encoder), layer_indexes, scalar_mix)
    return functions[key]


# encoder -> {(layer indexes, scalar mix): its forward tf.function}. Weak keys, and each
# function reaches its encoder through a weak reference: the cache keeps no encoder alive, and
# an encoder's functions (with the traces that hold its weights) go with it.
_FORWARD_FUNCTIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _traced_forward(encoder_ref, layer_indexes, scalar_mix):
    @tf.function(reduce_retracing=True)
    def forward(inputs):
        outputs = encoder_ref()(inputs, training=False)
        layers = outputs["encoder_outputs"]
        if scalar_mix is not None:
            return [tf.cast(scalar_mix(layers), tf.float32)]
        return [tf.cast(layers[index], tf.float32) for index in layer_indexes]

    return forward


def _log_progress(written: int, start: float) -> None:
    elapsed = max(time.time() - start, 1e-9)
    logging.info("extract_features: %d examples, %.1f examples/s", written, written / elapsed)


@dataclasses.dataclass(kw_only=True)
class FeatureExtractionOptions:
    """The settings of extract_features.py (the original's flags, then the TF2 ones). No
    training, so none of TrainingOptions': the encoder runs once over the input on the host."""

    # === The original flags ===
    input_file: str = option(help="Text file: one example per line, pairs as 'a ||| b'.")
    output_file: str = option(help="JSON-lines output file.")
    layers: str | None = option(
        None,
        help="Comma-separated encoder layers to output (default: -1,-2,-3,-4, or every layer "
        "of an encoder with fewer).",
    )
    bert_config_file: str | None = option(
        None,
        help="bert_config.json of the model (or an HF config.json). Default: the one beside "
        "init_checkpoint.",
    )
    max_seq_length: int = option(128, help="Maximum total input length in wordpieces.")
    init_checkpoint: str = option(
        help="Checkpoint to read: TF1, safetensors, pytorch_model.bin, tf_model.h5, a keras-hub "
        "preset, a TF Hub module or ours; local, gs://, or a URL downloaded once (an archive, "
        "hf://OWNER/NAME, a TF Hub handle)."
    )
    vocab_file: str | None = option(
        None,
        help="vocab.txt the model was trained with. Default: the one beside the config or "
        "init_checkpoint (a keras-hub preset's or TF Hub module's vocabulary).",
    )
    do_lower_case: bool | None = option(
        None,
        help="Lower-case the input (True for uncased models). Default: the casing "
        "init_checkpoint's own files record (a TF Hub module's, a keras-hub preset's, a Hugging "
        "Face tokenizer_config.json) or its released name says (cased_L-12_H-768_A-12), else "
        "True.",
    )
    preserve_unused_tokens: bool = option(
        False,
        # The original's help text: the [unusedN] tokens of the vocab written as words of their
        # own stay one token (tokenization.is_preserved_token).
        help="If True, Wordpiece tokenization will not be applied to words in the vocab.",
    )
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
        help="Take the speed paths of official_bert.kernels: the encoder runs as "
        "FusedInferenceEncoder (same results to float rounding; false: the plain Keras layers).",
    )
    inference_dtype: str = option(
        "float32",
        choices=("float32", "bfloat16"),
        help="With --fast_kernels: bfloat16 stores the weights and multiplies in bfloat16 "
        "(LayerNorm statistics in float32): about 1.5x faster on CPUs with AVX512_BF16 or AMX, "
        "features within bfloat16's precision (~1e-2).",
    )
    checkpoint_format: str | None = option(
        None, choices=CHECKPOINT_FORMATS, help="Default: detected."
    )
    scalar_mix_weights: str | None = option(
        None,
        help="scalar_mix_weights.json of run_classifier.py --feature_mode=frozen_scalar_mix: "
        'output one entry per token, {"index": "scalar_mix", "values": ...}, the learned mix '
        "of all layers, instead of --layers (and what --pooling=scalar_mix averages).",
    )
    doc_stride: int | None = option(
        None,
        help="Cut a line longer than max_seq_length into windows starting this many wordpieces "
        "apart (of a pair, the second text; the first is repeated in each) instead of "
        "truncating it; each token's features come from the window where it has the most "
        "context (the SQuAD rule). Default: truncate, as the original.",
    )
    pooling: str | None = option(
        None,
        choices=POOLINGS,
        help="Write one vector per line instead of per-token features: cls ([CLS] of the last "
        "layer), mean (mean of the last layer over the real tokens, as sentence-transformers) "
        "or scalar_mix (that mean of --scalar_mix_weights' mix of all layers).",
    )
    output_format: str | None = option(
        None,
        choices=("jsonl", "npy"),
        help='With --pooling: jsonl ({"linex_index": i, "embedding": [...]} per line) or npy '
        "(a float32 [lines, hidden_size] matrix). Default: npy for an output file named *.npy, "
        "else jsonl.",
    )
    normalize: bool = option(
        False, help="With --pooling: divide each vector by its L2 norm (unit vectors)."
    )
    sort_by_length: bool = option(
        True,
        help="Run the lines in batches of similar lengths: read ahead up to 256 MiB of outputs "
        "(a few hundred lines), run them longest first, write them in input order. The same "
        "features to float rounding, up to 2x faster on lines of mixed lengths; false: batches "
        "in file order.",
    )


def run_feature_extraction(options: FeatureExtractionOptions) -> int:
    """Reads input_file, runs the encoder of init_checkpoint (dropout off) and writes the
    features of every line to output_file in the original format (see extract_features), or
    with `pooling` one vector per line (see extract_sentence_embeddings). Returns the number of
    lines written.

    No runner and no driver: nothing trains and nothing is checkpointed; the encoder runs
    once, in order, on this host.
    """
    if options.use_tpu:
        logging.warning("--use_tpu is ignored by extract_features.py: features run on the host")
    _check_output_options(options)
    if not tf.io.gfile.exists(options.input_file):
        raise FileNotFoundError(f"--input_file: input file not found: {options.input_file}")
    init_checkpoint = resolve_checkpoint_url(options.init_checkpoint)
    config_file = options.bert_config_file or find_bert_config(init_checkpoint)
    if config_file is None:
        raise ValueError("--bert_config_file is required (none found beside init_checkpoint)")
    vocab_file = (
        options.vocab_file or find_vocab_file(config_file) or find_vocab_file(init_checkpoint)
    )
    if vocab_file is None:
        raise ValueError(
            f"--vocab_file is required (no vocab.txt beside {config_file} or init_checkpoint)"
        )
    do_lower_case = options.do_lower_case
    if do_lower_case is None:
        do_lower_case = find_lower_case(init_checkpoint)
        if do_lower_case is not None:
            logging.info(
                "--do_lower_case not given: %s, as %s records or names it",
                do_lower_case,
                init_checkpoint,
            )
    if do_lower_case is None:
        do_lower_case = True  # the original flag's default
    validate_case_matches_checkpoint(do_lower_case, init_checkpoint)
    config = read_bert_config(config_file)
    check_vocab_matches_config(config, vocab_file, config_file)
    if options.max_seq_length > config.max_position_embeddings:
        raise ValueError(
            f"--max_seq_length={options.max_seq_length} is longer than max_position_embeddings "
            f"({config.max_position_embeddings}) in {config_file}"
        )
    scalar_mix = layer_indexes = None
    if options.pooling:
        if options.scalar_mix_weights:
            scalar_mix = load_scalar_mix(options.scalar_mix_weights, config.num_hidden_layers)
    elif options.scalar_mix_weights:
        if options.layers is not None:
            raise ValueError(
                "--layers and --scalar_mix_weights exclude each other: with --scalar_mix_weights "
                "the output holds the mix of all layers only"
            )
        scalar_mix = load_scalar_mix(options.scalar_mix_weights, config.num_hidden_layers)
    else:
        layer_indexes = parse_layer_indexes(
            options.layers or default_layers(config.num_hidden_layers), config.num_hidden_layers
        )
    with fast_kernels(options.fast_kernels):
        encoder = BertEncoder.from_bert_config(config)
        encoder.build()
    with pooled_output_unused():  # layer outputs only: a checkpoint without a pooler is whole
        load_bert_weights(encoder, init_checkpoint, checkpoint_format=options.checkpoint_format)
    if options.fast_kernels:
        # The same outputs (dict of sequence, pooled and per-layer outputs) from fused products.
        encoder = FusedInferenceEncoder(encoder, dtype=options.inference_dtype)
    tokenizer = FastWordpieceBertTokenizer(
        vocab_file,
        do_lower_case=do_lower_case,
        preserve_unused_tokens=options.preserve_unused_tokens,
    )
    features = convert_text_examples(
        read_text_examples(options.input_file),
        tokenizer,
        options.max_seq_length,
        doc_stride=options.doc_stride,
    )
    # The outputs held per token while length sorting: the last layer (pooling), the mix, or
    # each of --layers.
    held_outputs = 1 if options.pooling or scalar_mix is not None else len(layer_indexes)
    sort_window = 0
    if options.sort_by_length:
        sort_window = length_sort_window(
            options.batch_size, options.max_seq_length, config.hidden_size * held_outputs
        )
    if options.pooling:
        output_format = sentence_output_format(options)
        count = extract_sentence_embeddings(
            encoder,
            features,
            options.output_file,
            options.pooling,
            num_lines=count_lines(options.input_file) if output_format == "npy" else None,
            output_format=output_format,
            normalize=options.normalize,
            batch_size=options.batch_size,
            scalar_mix=scalar_mix,
            sort_window=sort_window,
        )
        logging.info("Wrote the vectors of %d lines to %s", count, options.output_file)
        _warn_if_empty(count, options)
        return count
    count = extract_features(
        encoder,
        features,
        layer_indexes,
        options.output_file,
        batch_size=options.batch_size,
        scalar_mix=scalar_mix,
        sort_window=sort_window,
    )
    logging.info("Wrote features of %d examples to %s", count, options.output_file)
    _warn_if_empty(count, options)
    return count


def _warn_if_empty(count: int, options) -> None:
    if not count:
        logging.warning(
            "--input_file=%s holds no lines: --output_file=%s is empty",
            options.input_file,
            options.output_file,
        )


def sentence_output_format(options: FeatureExtractionOptions) -> str:
    """--pooling's output format: --output_format, else npy for an --output_file named *.npy
    (a file numpy.load should open) and jsonl for any other name."""
    if options.output_format:
        return options.output_format
    return "npy" if options.output_file.lower().endswith(".npy") else "jsonl"


def _check_output_options(options: FeatureExtractionOptions) -> None:
    """The flags that go together, each error naming them, and an --output_file that can be
    written (checked before the model runs)."""
    check_positive_options(options)
    check_local_output_file(options.output_file, "output_file")
    if options.inference_dtype != "float32" and not options.fast_kernels:
        raise ValueError(
            f"--inference_dtype={options.inference_dtype} needs --fast_kernels (the fused "
            "encoder holds the bfloat16 weights)"
        )
    if options.doc_stride is not None and options.doc_stride < 1:
        raise ValueError(f"--doc_stride must be a positive number, got {options.doc_stride}")
    if options.pooling is None:
        for name, value, default in (
            ("output_format", options.output_format or "jsonl", "jsonl"),
            ("normalize", options.normalize, False),
        ):
            if value != default:
                raise ValueError(
                    f"--{name}={value} needs --pooling (one vector per line); the per-token "
                    "features are always JSON lines"
                )
        return
    if options.pooling not in POOLINGS:
        raise ValueError(f"--pooling must be one of {list(POOLINGS)}, got {options.pooling!r}")
    if options.output_format not in (None, "jsonl", "npy"):
        raise ValueError(f"--output_format must be jsonl or npy, got {options.output_format!r}")
    if options.layers is not None:
        raise ValueError(
            f"--layers and --pooling exclude each other: --pooling={options.pooling} reads "
            + (
                "the scalar mix of all layers"
                if options.pooling == "scalar_mix"
                else "the last layer"
            )
        )
    if (options.pooling == "scalar_mix") != bool(options.scalar_mix_weights):
        raise ValueError(
            "--pooling=scalar_mix needs --scalar_mix_weights (the mix to average), and the "
            f"other poolings read the last layer only (got --pooling={options.pooling} and "
            f"--scalar_mix_weights={options.scalar_mix_weights!r})"
        )


def count_lines(path: str) -> int:
    """The number of lines of a text file (a last line without a newline counts), streaming."""
    count = 0
    ends_with_newline = True
    with tf.io.gfile.GFile(path, "rb") as reader:
        while chunk := reader.read(1 << 22):
            count += chunk.count(b"\n")
            ends_with_newline = chunk.endswith(b"\n")
    return count + (0 if ends_with_newline else 1)
