"""extract_features.py end to end: the original output format, values from the encoder."""

import json
import subprocess
import sys

import numpy as np
import pytest

from official_bert.checkpoints import load_bert_weights
from official_bert.config import BertConfig
from official_bert.data.feature_extraction_inputs import convert_text_examples, read_text_examples
from official_bert.models import BertEncoder
from official_bert.tokenization import FullTokenizer
from tests.conftest import REPO_ROOT


def _run(*flags):
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "extract_features.py"), *flags],
        capture_output=True,
        text=True,
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


@pytest.mark.parametrize(
    "content, extra, fragment",
    [
        ("one\n\nthree\n", [], "input.txt:2: empty line"),
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
    vocab.write_text("[PAD]\n[UNK]\n")
    text = tmp_path / "input.txt"
    text.write_text("hello\n")
    flags = _flags(original_tiny_dir, text, tmp_path / "o.jsonl")
    result = _run(*[f for f in flags if not f.startswith("--vocab_file")], f"--vocab_file={vocab}")
    assert (
        result.returncode != 0
        and "has 2 lines but" in result.stderr
        and "vocab_size = 1000" in result.stderr
    )
    result = _run(*_flags(original_tiny_dir, tmp_path / "missing.txt", tmp_path / "o.jsonl"))
    assert result.returncode != 0 and "input file not found" in result.stderr
