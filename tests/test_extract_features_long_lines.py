"""extract_features.py --doc_stride: a long line becomes overlapping windows and each token's
features come from the window where it has the most context, instead of truncation."""

import json

import numpy as np
import pytest

from official_bert.data.feature_extraction_inputs import (
    TextExample,
    convert_text_examples,
)
from official_bert.tasks.feature_extraction import (
    FeatureExtractionOptions,
    extract_features,
    run_feature_extraction,
)

# Ten words of the tiny vocabulary, one wordpiece each.
LONG = "the movie was very good and the plot was fun"


def _encode_rows(encoder, tokenizer, rows, seq_length):
    """All layers of the encoder on hand-packed rows ([tokens], [type ids]): [layer] arrays
    float32 [rows, seq_length, hidden]."""
    ids = np.zeros([len(rows), seq_length], np.int32)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for index, (tokens, type_ids) in enumerate(rows):
        ids[index, : len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
        mask[index, : len(tokens)] = 1
        types[index, : len(tokens)] = type_ids
    outputs = encoder(
        {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}, training=False
    )
    return [layer.numpy() for layer in outputs["encoder_outputs"]]


def _extract(encoder, tokenizer, examples, path, seq_length, doc_stride, batch_size=2):
    features = convert_text_examples(examples, tokenizer, seq_length, doc_stride=doc_stride)
    extract_features(encoder, features, [-1, 0], str(path), batch_size=batch_size)
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_single_text_in_three_windows_takes_each_token_from_its_max_context_window(
    tiny_checkpoint_encoder, tmp_path
):
    encoder, tokenizer = tiny_checkpoint_encoder
    pieces = LONG.split()
    # max_seq_length 8: windows of 6 pieces starting 2 apart, [0, 5], [2, 7], [4, 9] (see
    # tests/data/test_document_windows.py). Owners by hand: 0-3 the first window (token 3:
    # min(3, 2) = 2 there, 1 in the second), 4-5 the second, 6-9 the third.
    owners = [0, 0, 0, 0, 1, 1, 2, 2, 2, 2]
    starts = [0, 2, 4]
    windows = [(["[CLS]", *pieces[s : s + 6], "[SEP]"], [0] * 8) for s in starts]
    expected = _encode_rows(encoder, tokenizer, windows, 8)
    lines = _extract(
        encoder,
        tokenizer,
        [TextExample(0, "hello world"), TextExample(1, LONG), TextExample(2, "good")],
        tmp_path / "windows.jsonl",
        8,
        doc_stride=2,
    )
    assert [line["linex_index"] for line in lines] == [0, 1, 2]  # one line per input line
    long_line = lines[1]["features"]
    assert [token["token"] for token in long_line] == ["[CLS]", *pieces, "[SEP]"]
    # (window, row) of each line position: [CLS] of the first, [SEP] of the last.
    sources = [(0, 0)] + [(w, 1 + t - starts[w]) for t, w in enumerate(owners)] + [(2, 7)]
    for position, (window, row) in enumerate(sources):
        for layer_entry, layer in zip(long_line[position]["layers"], (-1, 0), strict=True):
            assert layer_entry["index"] == layer
            np.testing.assert_allclose(
                layer_entry["values"], expected[layer][window, row], atol=2e-6
            )

    # Lines that fit are what they are without --doc_stride; the long one is truncated there.
    plain = _extract(
        encoder,
        tokenizer,
        [TextExample(0, "hello world"), TextExample(1, LONG), TextExample(2, "good")],
        tmp_path / "plain.jsonl",
        8,
        doc_stride=None,
    )
    assert plain[0] == lines[0] and plain[2] == lines[2]
    assert len(plain[1]["features"]) == 8


def test_a_pair_repeats_its_first_text_and_windows_the_second(tiny_checkpoint_encoder, tmp_path):
    encoder, tokenizer = tiny_checkpoint_encoder
    pieces = LONG.split()
    # max_seq_length 10 with "hello world" first: 5 pieces of B per window, starts 0, 2, 4, 6
    # ([0, 4], [2, 6], [4, 8], [6, 9]). Owners by hand (min(left, right) + 0.01 * length):
    # 0-2 first; 3: 1.05 in [0, 4] vs 1.05 in [2, 6], a tie the first wins; 4: [2, 6] 2.05;
    # 5: [2, 6] 1.05 vs [4, 8] 1.05, the earlier; 6: [4, 8] 2.05; 7: [4, 8] 1.05 vs [6, 9]
    # 1.04; 8, 9: the last.
    owners = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3]
    starts = [0, 2, 4, 6]
    head = ["[CLS]", "hello", "world", "[SEP]"]
    windows = [
        (head + pieces[s : s + 5] + ["[SEP]"], [0] * 4 + [1] * (min(5, 10 - s) + 1)) for s in starts
    ]
    expected = _encode_rows(encoder, tokenizer, windows, 10)
    (line,) = _extract(
        encoder, tokenizer, [TextExample(7, "hello world", LONG)], tmp_path / "pair.jsonl", 10, 2
    )
    assert line["linex_index"] == 7
    assert [token["token"] for token in line["features"]] == [*head, *pieces, "[SEP]"]
    last_row = 4 + (10 - starts[-1])
    sources = [(0, row) for row in range(4)]
    sources += [(w, 4 + t - starts[w]) for t, w in enumerate(owners)] + [(3, last_row)]
    for position, (window, row) in enumerate(sources):
        np.testing.assert_allclose(
            line["features"][position]["layers"][0]["values"],
            expected[-1][window, row],
            atol=2e-6,
        )


def test_a_first_text_that_leaves_no_room_is_a_clear_error(tiny_checkpoint_encoder):
    _, tokenizer = tiny_checkpoint_encoder
    examples = [TextExample(4, "the movie was very good and", "fun")]
    with pytest.raises(ValueError, match="line 5: .* 6 wordpieces leave no room"):
        list(convert_text_examples(examples, tokenizer, 8, doc_stride=2))


def test_a_bad_doc_stride_is_named(tiny_checkpoint_dir, tmp_path):
    text = tmp_path / "input.txt"
    text.write_text("hello\n")
    options = FeatureExtractionOptions(
        input_file=str(text),
        output_file=str(tmp_path / "out.jsonl"),
        vocab_file=str(tiny_checkpoint_dir / "vocab.txt"),
        init_checkpoint=str(tiny_checkpoint_dir / "bert_model.ckpt"),
        doc_stride=0,
    )
    with pytest.raises(ValueError, match="--doc_stride must be a positive number, got 0"):
        run_feature_extraction(options)
    assert list(tmp_path.iterdir()) == [text]
