"""extract_features.py's length-sorted batches (--sort_by_length, the default): lines run
longest first within read-ahead windows, and come out in input order with the values that
batches in file order give."""

import itertools
import json

import numpy as np
import pytest
import tensorflow as tf

from official_bert.config import BertConfig
from official_bert.data.feature_extraction_inputs import TextExample, convert_text_examples
from official_bert.models import BertEncoder
from official_bert.tasks.feature_extraction import (
    FeatureExtractionOptions,
    extract_sentence_embeddings,
    run_feature_extraction,
)
from official_bert.tasks.line_batches import (
    length_sort_window,
    length_sorted_line_outputs,
    line_outputs,
)

WORDS = "the movie was very good and the plot was fun but he bought milk at a store".split()


def _mixed_examples(count=23):
    """Short lines of 1 to 12 words in no order of length, every fourth a pair, and every
    fourth another a line of 40 words, longer than a 32-piece row (windows with doc_stride,
    truncated without): in file order every batch of 4 holds a long line."""
    examples = []
    for index in range(count):
        length = 40 if index % 4 == 1 else 1 + (index * 5) % 12
        text = " ".join(WORDS[(index + k) % len(WORDS)] for k in range(length))
        second = " ".join(WORDS[: 2 + index % 6]) if index % 4 == 2 else None
        examples.append(TextExample(index, text, second))
    return examples


def _recording(forward):
    """forward, and the [batch, width] shapes it was called with."""
    shapes = []

    def recorded(inputs):
        shapes.append(tuple(inputs["input_word_ids"].shape))
        return forward(inputs)

    return recorded, shapes


@pytest.mark.parametrize("doc_stride", [None, 8])
def test_sorted_batches_give_the_file_order_outputs_with_fewer_positions(
    tiny_checkpoint_encoder, doc_stride
):
    encoder, tokenizer = tiny_checkpoint_encoder

    @tf.function(reduce_retracing=True)
    def layers(inputs):
        outputs = encoder(inputs, training=False)["encoder_outputs"]
        return [outputs[-1], outputs[0]]

    def features():
        return convert_text_examples(_mixed_examples(), tokenizer, 32, doc_stride=doc_stride)

    in_file_order, file_shapes = _recording(layers)
    sorted_by_length, sorted_shapes = _recording(layers)
    expected = list(line_outputs(in_file_order, features(), 4, trim_padding=True))
    got = list(length_sorted_line_outputs(sorted_by_length, features(), 4, window_lines=8))

    assert [line[0] for line in got] == list(range(23))
    for (want_id, want_tokens, want), (got_id, got_tokens, values) in zip(
        expected, got, strict=True
    ):
        assert (got_id, got_tokens) == (want_id, want_tokens)
        assert [v.shape for v in values] == [w.shape for w in want]
        for v, w in zip(values, want, strict=True):
            np.testing.assert_allclose(v, w, atol=2e-6, rtol=0)
    # Within each window of 8 lines the batches are cut longest first, so they get shorter.
    widths = [width for _, width in sorted_shapes]
    assert widths[:2] == sorted(widths[:2], reverse=True)
    positions = sum(batch * width for batch, width in sorted_shapes)
    file_positions = sum(batch * width for batch, width in file_shapes)
    # Here 576 against 768 positions (doc_stride None), 960 against 1152 (8: more full rows).
    assert positions <= 0.85 * file_positions, (sorted_shapes, file_shapes)


def test_a_line_in_windows_is_kept_together_and_in_order(tiny_checkpoint_encoder):
    """Ids as vectors: each token's output shows which row position it came from."""
    _, tokenizer = tiny_checkpoint_encoder

    def ids(inputs):
        return [tf.cast(inputs["input_word_ids"][..., None], tf.float32)]

    examples = [TextExample(0, "he bought milk"), TextExample(1, " ".join(WORDS * 2))]
    examples.append(TextExample(2, "the plot"))
    features = list(convert_text_examples(examples, tokenizer, 16, doc_stride=4))
    assert [f.unique_id for f in features].count(1) > 2  # the long line is several windows
    lines = list(length_sorted_line_outputs(ids, features, 2, window_lines=3))
    assert [unique_id for unique_id, _, _ in lines] == [0, 1, 2]
    for _, tokens, (vectors,) in lines:
        assert vectors[:, 0].tolist() == tokenizer.convert_tokens_to_ids(tokens)


def test_reading_ahead_stops_at_the_window(tiny_checkpoint_encoder):
    """An endless input yields its first lines after one window of lines is read."""
    _, tokenizer = tiny_checkpoint_encoder
    drawn = []

    def endless():
        for index in itertools.count():
            drawn.append(index)
            yield TextExample(index, " ".join(WORDS[: 1 + index % 9]))

    def ids(inputs):
        return [tf.cast(inputs["input_word_ids"][..., None], tf.float32)]

    features = convert_text_examples(endless(), tokenizer, 16, examples_per_batch=8)
    first = list(itertools.islice(length_sorted_line_outputs(ids, features, 4, 12), 5))
    assert [unique_id for unique_id, _, _ in first] == list(range(5))
    assert len(drawn) == 16  # two packer batches of 8 cover the window of 12 lines


def test_the_window_holds_whole_batches_within_its_memory():
    # BERT-Base's four last layers, 128 tokens a line: 1.5 MiB a line, 170 lines in 256 MiB.
    assert length_sort_window(32, 128, 4 * 768) == 160
    assert length_sort_window(32, 128, 384) == 1344  # MiniLM's last layer
    assert length_sort_window(8, 512, 1024) == 128
    assert length_sort_window(64, 512, 24 * 1024) == 64  # never less than one batch


def test_a_line_whose_windows_end_early_is_named(tiny_checkpoint_encoder):
    _, tokenizer = tiny_checkpoint_encoder
    features = list(
        convert_text_examples([TextExample(7, " ".join(WORDS * 2))], tokenizer, 16, doc_stride=4)
    )

    def ids(inputs):
        return [tf.cast(inputs["input_word_ids"][..., None], tf.float32)]

    with pytest.raises(ValueError, match=r"line 7: the features end after 2 of its \d+ windows"):
        list(length_sorted_line_outputs(ids, features[:2], 2, window_lines=4))


@pytest.mark.parametrize("pooling", [None, "mean"])
def test_the_script_writes_the_same_file_sorted_or_not(tiny_checkpoint_dir, tmp_path, pooling):
    text = tmp_path / "input.txt"
    text.write_text(
        "".join(
            example.text_a + (f" ||| {example.text_b}" if example.text_b else "") + "\n"
            for example in _mixed_examples()
        ),
        encoding="utf-8",
    )
    outputs = {}
    for sort_by_length in (False, True):
        output = tmp_path / f"out_{sort_by_length}.jsonl"
        options = FeatureExtractionOptions(
            input_file=str(text),
            output_file=str(output),
            vocab_file=str(tiny_checkpoint_dir / "vocab.txt"),
            init_checkpoint=str(tiny_checkpoint_dir / "bert_model.ckpt"),
            max_seq_length=24,
            batch_size=4,
            layers=None if pooling else "-1,-2",
            pooling=pooling,
            sort_by_length=sort_by_length,
        )
        assert run_feature_extraction(options) == 23
        outputs[sort_by_length] = [json.loads(line) for line in output.read_text().splitlines()]
    file_order, length_sorted = outputs[False], outputs[True]
    assert [line["linex_index"] for line in length_sorted] == list(range(23))
    if pooling:
        np.testing.assert_allclose(
            [line["embedding"] for line in length_sorted],
            [line["embedding"] for line in file_order],
            atol=2e-6,
        )
        return
    for got, want in zip(length_sorted, file_order, strict=True):
        assert [t["token"] for t in got["features"]] == [t["token"] for t in want["features"]]
        np.testing.assert_allclose(
            [[layer["values"] for layer in t["layers"]] for t in got["features"]],
            [[layer["values"] for layer in t["layers"]] for t in want["features"]],
            atol=2e-6,  # the file's 6 decimals, and float rounding
        )


def _count_traces(encoder, traces):
    """Appends to `traces` at each trace of the encoder (Keras runs .call once per trace)."""
    original_call = encoder.call

    def counting_call(*args, **kwargs):
        traces.append(1)
        return original_call(*args, **kwargs)

    encoder.call = counting_call


def test_one_encoder_is_traced_once_for_many_files_and_not_kept_alive(
    tiny_checkpoint_encoder, tmp_path
):
    import gc
    import weakref

    from official_bert.tasks import feature_extraction

    _, tokenizer = tiny_checkpoint_encoder
    config = BertConfig(
        vocab_size=len(tokenizer.vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
    )
    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    traces = []
    _count_traces(encoder, traces)
    examples = _mixed_examples(9)
    traces_after_each_file = []
    for index in range(3):
        features = convert_text_examples(examples, tokenizer, 16)
        output = tmp_path / f"vectors_{index}.jsonl"
        assert extract_sentence_embeddings(encoder, features, str(output), "cls", batch_size=4) == 9
        traces_after_each_file.append(len(traces))
    # The first file traces (a shape, then any length); the others reuse its function.
    assert traces_after_each_file[0] >= 1
    assert traces_after_each_file == [traces_after_each_file[0]] * 3
    # The cache holds the encoder's functions without keeping the encoder alive. (Other tests'
    # encoders in this worker may go with the same collection, so the size is not compared.)
    assert encoder in feature_extraction._FORWARD_FUNCTIONS
    encoder_ref = weakref.ref(encoder)
    functions_before = len(feature_extraction._FORWARD_FUNCTIONS)
    del encoder
    gc.collect()
    assert encoder_ref() is None
    assert len(feature_extraction._FORWARD_FUNCTIONS) <= functions_before - 1
