"""extract_features.py end to end: the original output format, values from the encoder."""

import json
import os
import stat
import threading

import numpy as np
import pytest
import tensorflow as tf

from official_bert.checkpoints import load_bert_weights
from official_bert.config import BertConfig
from official_bert.data.feature_extraction_inputs import convert_text_examples, read_text_examples
from official_bert.models import BertEncoder
from official_bert.tasks.feature_extraction import extract_features
from official_bert.tokenization import FullTokenizer
from tests.conftest import FIXTURES, REPO_ROOT
from tests.warm_interpreter import run_script


def _run(*flags):
    return run_script(
        [str(REPO_ROOT / "extract_features.py"), *flags],
        timeout=300,
        cwd=REPO_ROOT,
    )


def _flags(fixture, input_file, output_file, *extra):
    return [
        f"--input_file={input_file}",
        f"--output_file={output_file}",
        f"--vocab_file={fixture / 'vocab.txt'}",
        f"--bert_config_file={fixture / 'bert_config.json'}",
        f"--init_checkpoint={fixture / 'bert_model.ckpt'}",
        "--layers=-1,-2",
        *extra,
    ]


def test_writes_the_original_format_with_encoder_values(original_tiny_dir, tmp_path):
    text = tmp_path / "input.txt"
    text.write_text(
        "the man went to the store.\nhe bought milk ||| and a loaf of bread.\n"
        "a sentence that is long enough to be truncated by the short length\n"
    )
    output = tmp_path / "out" / "features.jsonl"
    result = _run(
        *_flags(
            original_tiny_dir,
            text,
            output,
            "--layers=-1,0",
            "--max_seq_length=12",
            "--batch_size=2",
        )
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["linex_index"] for line in lines] == [0, 1, 2]
    assert list(lines[0]) == ["linex_index", "features"]
    assert list(lines[0]["features"][0]) == ["token", "layers"]
    assert [f["token"] for f in lines[0]["features"]][0] == "[CLS]"
    assert len(lines[2]["features"]) == 12  # truncated to max_seq_length, no padding tokens

    # Recompute independently: same tokenization, encoder loaded from the same checkpoint.
    config = BertConfig.from_json_file(str(original_tiny_dir / "bert_config.json"))
    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    load_bert_weights(encoder, str(original_tiny_dir / "bert_model.ckpt"))
    tokenizer = FullTokenizer(str(original_tiny_dir / "vocab.txt"), do_lower_case=True)
    features = list(convert_text_examples(read_text_examples(str(text)), tokenizer, 12))
    layers = encoder(
        {
            "input_word_ids": np.array([f.input_ids for f in features], np.int32),
            "input_mask": np.array([f.input_mask for f in features], np.int32),
            "input_type_ids": np.array([f.input_type_ids for f in features], np.int32),
        },
        training=False,
    )["encoder_outputs"]
    for row, (line, feature) in enumerate(zip(lines, features, strict=True)):
        assert [f["token"] for f in line["features"]] == feature.tokens
        for position, token_features in enumerate(line["features"]):
            assert [layer["index"] for layer in token_features["layers"]] == [-1, 0]
            for layer in token_features["layers"]:
                values = np.array(layer["values"])
                assert values.shape == (64,)
                np.testing.assert_allclose(values, layers[layer["index"]][row, position], atol=2e-6)
                assert all(round(v, 6) == v for v in layer["values"])
    assert lines[1]["features"][4]["token"] == "[SEP]"


def test_bfloat16_inference_is_float32_within_bfloat16_precision(original_tiny_dir, tmp_path):
    text = tmp_path / "input.txt"
    text.write_text("the man went to the store.\nhe bought milk ||| and a loaf of bread.\n")
    values = {}
    for dtype in ("float32", "bfloat16"):
        output = tmp_path / f"{dtype}.jsonl"
        result = _run(*_flags(original_tiny_dir, text, output, f"--inference_dtype={dtype}"))
        assert result.returncode == 0, result.stderr[-3000:]
        values[dtype] = np.array(
            [
                layer["values"]
                for line in output.read_text().splitlines()
                for token in json.loads(line)["features"]
                for layer in token["layers"]
            ]
        )
    error = np.abs(values["bfloat16"] - values["float32"])
    assert values["float32"].shape == values["bfloat16"].shape
    assert error.mean() < 0.02 and error.max() < 0.2, (error.mean(), error.max())
    assert error.max() > 0  # the products did run in bfloat16
    result = _run(
        *_flags(original_tiny_dir, text, tmp_path / "o.jsonl"),
        "--inference_dtype=bfloat16",
        "--nofast_kernels",
    )
    assert result.returncode != 0 and "needs --fast_kernels" in result.stderr


@pytest.mark.parametrize(
    "content, extra, fragment",
    [
        ("one\n", ["--max_seq_length=600"], "longer than max_position_embeddings (512)"),
        ("one\n", ["--layers=-3"], "layer -3 does not exist in an encoder with 2 layers"),
    ],
)
def test_bad_input_is_a_clear_error_and_leaves_no_output(
    original_tiny_dir, tmp_path, content, extra, fragment
):
    text = tmp_path / "input.txt"
    text.write_text(content)
    output = tmp_path / "features.jsonl"
    result = _run(*_flags(original_tiny_dir, text, output, *extra))
    assert result.returncode != 0
    assert fragment in result.stderr
    assert list(tmp_path.iterdir()) == [text]


def test_vocab_mismatch_and_missing_input(original_tiny_dir, tmp_path):
    vocab = tmp_path / "vocab.txt"
    # Longer than the embedding table (a shorter vocab is a warning: a padded table).
    original = (original_tiny_dir / "vocab.txt").read_text(encoding="utf-8")
    vocab.write_text(original + "[extra0]\n[extra1]\n", encoding="utf-8")
    text = tmp_path / "input.txt"
    text.write_text("hello\n")
    flags = _flags(original_tiny_dir, text, tmp_path / "o.jsonl")
    result = _run(*[f for f in flags if not f.startswith("--vocab_file")], f"--vocab_file={vocab}")
    assert (
        result.returncode != 0
        and "has 1002 lines but" in result.stderr
        and "vocab_size = 1000" in result.stderr
    )
    result = _run(*_flags(original_tiny_dir, tmp_path / "missing.txt", tmp_path / "o.jsonl"))
    assert result.returncode != 0 and "input file not found" in result.stderr


def test_an_empty_input_gives_an_empty_output_and_a_warning(original_tiny_dir, tmp_path):
    """Both formats: an empty jsonl file, an npy matrix of no rows (the writers make no file
    when given nothing to write; the rename of their temporary used to fail)."""
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    jsonl = tmp_path / "o.jsonl"
    result = _run(*_flags(original_tiny_dir, empty, jsonl))
    assert result.returncode == 0, result.stderr[-3000:]
    assert jsonl.read_text() == "" and "holds no lines" in result.stderr
    npy = tmp_path / "o.npy"
    flags = [f for f in _flags(original_tiny_dir, empty, npy) if not f.startswith("--layers")]
    result = _run(*flags, "--pooling=mean")
    assert result.returncode == 0, result.stderr[-3000:]
    assert np.load(npy).shape == (0, 64)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.txt", "o.jsonl", "o.npy"]


def _scalar_mix_file(path, layer_weights, gamma=1.0, layers=None):
    layers = len(layer_weights) if layers is None else layers
    path.write_text(json.dumps({"layers": layers, "layer_weights": layer_weights, "gamma": gamma}))
    return path


def test_scalar_mix_weights_replace_the_layers_with_their_mix(original_tiny_dir, tmp_path):
    """One-hot weights reproduce a layer of a plain run; a 0.25/0.75 mix with gamma 2 (the
    library call the script makes) is that mix of the plain run's layers."""
    from official_bert.scalar_mix_weights import load_scalar_mix
    from official_bert.tasks import feature_extraction

    text = tmp_path / "input.txt"
    text.write_text("the man went to the store.\nhe bought milk ||| and a loaf of bread.\n")
    flags = [f for f in _flags(original_tiny_dir, text, "") if not f.startswith("--output_file")]
    flags = [f for f in flags if not f.startswith("--layers")] + ["--max_seq_length=16"]

    def run(name, *extra):
        output = tmp_path / f"{name}.jsonl"
        result = _run(*flags, f"--output_file={output}", *extra)
        assert result.returncode == 0, result.stderr[-3000:]
        return [json.loads(line) for line in output.read_text().splitlines()]

    plain = run("plain", "--layers=0,1")
    one_hot = run(
        "one_hot", f"--scalar_mix_weights={_scalar_mix_file(tmp_path / 'a.json', [0.0, 1.0])}"
    )

    config = BertConfig.from_json_file(str(original_tiny_dir / "bert_config.json"))
    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    load_bert_weights(encoder, str(original_tiny_dir / "bert_model.ckpt"))
    tokenizer = FullTokenizer(str(original_tiny_dir / "vocab.txt"), do_lower_case=True)
    feature_extraction.extract_features(
        encoder,
        convert_text_examples(read_text_examples(str(text)), tokenizer, 16),
        None,
        str(tmp_path / "mixed.jsonl"),
        scalar_mix=load_scalar_mix(
            str(_scalar_mix_file(tmp_path / "b.json", [0.25, 0.75], gamma=2.0)), 2
        ),
    )
    mixed = [json.loads(line) for line in (tmp_path / "mixed.jsonl").read_text().splitlines()]

    for plain_line, one_hot_line, mixed_line in zip(plain, one_hot, mixed, strict=True):
        assert plain_line["linex_index"] == one_hot_line["linex_index"] == mixed_line["linex_index"]
        assert list(one_hot_line) == ["linex_index", "features"]
        for token, token_one_hot, token_mixed in zip(
            plain_line["features"], one_hot_line["features"], mixed_line["features"], strict=True
        ):
            assert token["token"] == token_one_hot["token"] == token_mixed["token"]
            assert [layer["index"] for layer in token_one_hot["layers"]] == ["scalar_mix"]
            first, last = (np.array(layer["values"]) for layer in token["layers"])
            np.testing.assert_allclose(token_one_hot["layers"][0]["values"], last, atol=1e-5)
            np.testing.assert_allclose(
                token_mixed["layers"][0]["values"], 2.0 * (0.25 * first + 0.75 * last), atol=2e-5
            )


@pytest.mark.parametrize(
    "layer_weights, extra, fragment",
    [
        ([0.2, 0.3, 0.5], [], "holds weights of 3 layers, but the model has 2 encoder layers"),
        ([0.5, 0.5], ["--layers=-1"], "--layers and --scalar_mix_weights exclude each other"),
    ],
)
def test_bad_scalar_mix_weights_are_a_clear_error(
    original_tiny_dir, tmp_path, layer_weights, extra, fragment
):
    text = tmp_path / "input.txt"
    text.write_text("hello\n")
    weights_file = _scalar_mix_file(tmp_path / "mix.json", layer_weights)
    flags = [
        f for f in _flags(original_tiny_dir, text, tmp_path / "o.jsonl") if "--layers" not in f
    ]
    result = _run(*flags, f"--scalar_mix_weights={weights_file}", *extra)
    assert result.returncode != 0
    assert fragment in result.stderr, result.stderr[-2000:]
    assert not (tmp_path / "o.jsonl").exists()


def test_each_batch_runs_as_long_as_its_longest_line(original_tiny_dir, tmp_path):
    config = BertConfig.from_json_file(str(original_tiny_dir / "bert_config.json"))
    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    load_bert_weights(encoder, str(original_tiny_dir / "bert_model.ckpt"))
    widths = []

    def width_recording_encoder(inputs, training=False):
        width = tf.numpy_function(
            lambda w: (widths.append(int(w)), w)[1],
            [tf.shape(inputs["input_word_ids"])[1]],
            tf.int32,
        )
        with tf.control_dependencies([width]):
            return encoder(inputs, training=training)

    text = tmp_path / "input.txt"
    # Two lines of 5-7 pieces, then two of 12-14 pieces: batches of 2 cut to 8, then 16.
    text.write_text(
        "the man went .\nhe bought milk .\n"
        "the man went to the store and he bought a gallon of milk .\n"
        "he bought milk ||| and a loaf of bread at the store .\n"
    )
    tokenizer = FullTokenizer(str(original_tiny_dir / "vocab.txt"), do_lower_case=True)
    features = list(convert_text_examples(read_text_examples(str(text)), tokenizer, 64))
    output = tmp_path / "features.jsonl"
    extract_features(width_recording_encoder, features, [-1], str(output), batch_size=2)
    assert widths == [8, 16]
    full = encoder(
        {
            "input_word_ids": np.array([f.input_ids for f in features], np.int32),
            "input_mask": np.array([f.input_mask for f in features], np.int32),
            "input_type_ids": np.array([f.input_type_ids for f in features], np.int32),
        },
        training=False,
    )["sequence_output"].numpy()
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [len(line["features"]) for line in lines] == [len(f.tokens) for f in features]
    for row, line in enumerate(lines):
        values = [token["layers"][0]["values"] for token in line["features"]]
        np.testing.assert_allclose(values, full[row, : len(values)], atol=2e-6)


def test_a_checkpoint_without_a_pooler_is_read_without_a_warning(tmp_path, caplog):
    """Features are layer outputs, never the pooled_output: a Hugging Face token-classification
    file (no bert.pooler.*) gives them without the warning that a bare encoder's pooled_output
    would be random (which loading it as an encoder elsewhere still gives)."""
    import logging

    from official_bert.tasks.feature_extraction import (
        FeatureExtractionOptions,
        run_feature_extraction,
    )

    source = FIXTURES / "hf_finetuned_heads" / "token_classification"
    config = BertConfig.from_json_file(str(source / "config.json"))
    vocab = tmp_path / "vocab.txt"
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]
    names = specials + [f"word{i}" for i in range(config.vocab_size - len(specials))]
    vocab.write_text("\n".join(names) + "\n")
    text = tmp_path / "input.txt"
    text.write_text("the cat sat\n")
    output = tmp_path / "features.jsonl"
    options = FeatureExtractionOptions(
        input_file=str(text),
        output_file=str(output),
        vocab_file=str(vocab),
        init_checkpoint=str(source),
        layers="-1",
        max_seq_length=8,
    )
    with caplog.at_level(logging.WARNING):
        assert run_feature_extraction(options) == 1
    assert not [r.getMessage() for r in caplog.records if "pooler" in r.getMessage()]
    line = json.loads(output.read_text())
    assert [f["token"] for f in line["features"]] == ["[CLS]", "the", "cat", "sat", "[SEP]"]

    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    with caplog.at_level(logging.WARNING):
        load_bert_weights(encoder, str(source))
    assert any("holds no pooler" in r.getMessage() for r in caplog.records)


def test_the_default_layers_of_a_shallow_encoder_are_all_of_them(original_tiny_dir, tmp_path):
    """The original's default (-1,-2,-3,-4) names layers a 2-layer encoder has not: without
    --layers every layer is written, the last first, as the original orders them."""
    text = tmp_path / "input.txt"
    text.write_text("the man went to the store.\n")
    output = tmp_path / "features.jsonl"
    flags = [f for f in _flags(original_tiny_dir, text, output) if not f.startswith("--layers")]
    result = _run(*flags, "--max_seq_length=12")
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = [json.loads(line) for line in output.read_text().splitlines()]
    assert [layer["index"] for layer in line["features"][0]["layers"]] == [-1, -2]


def test_output_through_a_symbolic_link_and_into_a_fifo(original_tiny_dir, tmp_path):
    """The original wrote through --output_file: a link's target takes the features (the link
    stays), a FIFO (/dev/stdout into a pipe) takes them in place."""
    text = tmp_path / "input.txt"
    text.write_text("the man went to the store.\nhe bought milk ||| and bread.\n")
    plain = _run(*_flags(original_tiny_dir, text, tmp_path / "plain.jsonl"))
    assert plain.returncode == 0, plain.stderr[-3000:]
    expected = (tmp_path / "plain.jsonl").read_text()

    link = tmp_path / "linked.jsonl"
    link.symlink_to(tmp_path / "target.jsonl")
    linked = _run(*_flags(original_tiny_dir, text, link))
    assert linked.returncode == 0, linked.stderr[-3000:]
    assert link.is_symlink() and link.read_text() == expected

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    piped = _run(*_flags(original_tiny_dir, text, fifo))
    reader.join(timeout=60)
    assert piped.returncode == 0, piped.stderr[-3000:]
    assert received == [expected]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_empty_lines_are_cls_sep_examples_as_in_the_original(original_tiny_dir, tmp_path):
    """The original's read_examples makes an empty (or blank) line an example of no text: the
    outputs keep a line (a row) per input line, and a warning names the empty lines."""
    text = tmp_path / "input.txt"
    text.write_text("one\n\n   \nthree ||| four\n\n")
    output = tmp_path / "features.jsonl"
    result = _run(*_flags(original_tiny_dir, text, output, "--layers=-1"))
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["linex_index"] for line in lines] == [0, 1, 2, 3, 4]
    tokens = [[feature["token"] for feature in line["features"]] for line in lines]
    assert tokens[1] == tokens[2] == tokens[4] == ["[CLS]", "[SEP]"]
    assert tokens[3][0] == "[CLS]" and tokens[3].count("[SEP]") == 2
    assert lines[1]["features"] == lines[2]["features"]
    assert "input.txt:2: empty line" in result.stderr
    assert "3 empty lines (lines 2, 3, 5)" in result.stderr

    vectors = tmp_path / "vectors.npy"
    flags = [f for f in _flags(original_tiny_dir, text, vectors) if not f.startswith("--layers")]
    result = _run(*flags, "--pooling=mean", "--output_format=npy")
    assert result.returncode == 0, result.stderr[-3000:]
    assert np.load(vectors).shape == (5, 64)


def test_the_casing_a_released_models_folder_name_gives_is_logged(
    original_tiny_dir, tmp_path, caplog
):
    """--do_lower_case left out: a folder named as Google's cased release is read cased, and
    the log says so (the flag's default reads True in the original's help)."""
    import logging
    import shutil

    from official_bert.tasks.feature_extraction import (
        FeatureExtractionOptions,
        run_feature_extraction,
    )

    release = tmp_path / "cased_L-2_H-128_A-2"
    shutil.copytree(original_tiny_dir, release)
    text = tmp_path / "input.txt"
    text.write_text("Hello !\n")
    options = FeatureExtractionOptions(
        input_file=str(text),
        output_file=str(tmp_path / "features.jsonl"),
        init_checkpoint=str(release / "bert_model.ckpt"),
        layers="-1",
        max_seq_length=8,
    )
    with caplog.at_level(logging.INFO, logger="absl"):
        assert run_feature_extraction(options) == 1
    assert any("--do_lower_case not given: False" in r.getMessage() for r in caplog.records), [
        r.getMessage() for r in caplog.records
    ]


def test_a_line_not_in_utf8_is_named_with_the_conversion(tmp_path):
    # A GBK file, as a Chinese Windows editor saves it: the same message as every other reader.
    text = tmp_path / "input.txt"
    text.write_bytes("第一行\n".encode() + "第二行\n".encode("gbk"))
    with pytest.raises(
        ValueError,
        match=r"input.txt, line 2 \(byte 0 of the line\): not UTF-8 .*iconv -f GB18030 -t UTF-8",
    ):
        list(read_text_examples(str(text)))
