"""extract_features.py --pooling: one vector per line, against sentence-transformers' reference
embeddings of all-MiniLM-L6-v2 and against the per-token features of the same run."""

import itertools
import json

import numpy as np
import pytest
import tensorflow as tf

from official_bert.data.feature_extraction_inputs import TextExample, convert_text_examples
from official_bert.npy_row_writer import NpyRowWriter
from official_bert.scalar_mix_weights import load_scalar_mix
from official_bert.tasks.feature_extraction import (
    FeatureExtractionOptions,
    count_lines,
    extract_features,
    extract_sentence_embeddings,
    run_feature_extraction,
)
from official_bert.tasks.line_batches import line_outputs
from official_bert.tasks.sentence_pooling import pool_tokens
from tests.conftest import MINILM_FIXTURE, REPO_ROOT
from tests.warm_interpreter import run_script


def _run(*flags):
    return run_script(
        [str(REPO_ROOT / "extract_features.py"), *flags],
        timeout=300,
        cwd=REPO_ROOT,
    )


def test_mean_pooling_normalized_reproduces_sentence_transformers(minilm_dir, tmp_path):
    """Reference: tests/fixtures/minilm_l6_hf, sentence-transformers' sentence_embedding of
    all-MiniLM-L6-v2 (HF transformers BertModel, attention-mask mean, L2 normalisation)."""
    sentences = json.loads((MINILM_FIXTURE / "sentences.json").read_text())
    reference = np.load(MINILM_FIXTURE / "outputs.npz")["sentence_embedding"]
    text = tmp_path / "sentences.txt"
    text.write_text("".join(sentence + "\n" for sentence in sentences), encoding="utf-8")
    common = [
        f"--input_file={text}",
        f"--vocab_file={minilm_dir / 'vocab.txt'}",
        f"--bert_config_file={minilm_dir / 'config.json'}",
        f"--init_checkpoint={minilm_dir}",
        "--pooling=mean",
        "--normalize",
        "--max_seq_length=32",
        "--batch_size=3",  # a last batch that is not full
    ]
    result = _run(*common, "--output_format=npy", f"--output_file={tmp_path / 'e.npy'}")
    assert result.returncode == 0, result.stderr[-3000:]
    matrix = np.load(tmp_path / "e.npy")
    assert matrix.dtype == np.float32 and matrix.shape == (4, 384)
    np.testing.assert_allclose(matrix, reference, atol=1e-5, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-6)

    result = _run(*common, f"--output_file={tmp_path / 'e.jsonl'}")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert [line["linex_index"] for line in lines] == [0, 1, 2, 3]
    assert list(lines[0]) == ["linex_index", "embedding"]
    # JSON holds the same float32 values as the matrix, digit for digit.
    np.testing.assert_array_equal(
        np.array([line["embedding"] for line in lines], np.float32), matrix
    )
    # Without --output_format the file's name decides: *.npy is the matrix.
    result = _run(*common, f"--output_file={tmp_path / 'named.npy'}")
    assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_array_equal(np.load(tmp_path / "named.npy"), matrix)
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "e.jsonl",
        "e.npy",
        "named.npy",
        text.name,
    ]


EXAMPLES = [
    TextExample(0, "the movie was good"),
    TextExample(1, "hello world ||| it was fun"),
    TextExample(2, "the movie was very good and the plot was fun"),
]


@pytest.mark.parametrize("doc_stride", [None, 2])
def test_poolings_are_those_of_the_token_features(tiny_checkpoint_encoder, tmp_path, doc_stride):
    """cls is the per-token output's [CLS] of the last layer, mean its mean over the line's
    tokens, scalar_mix the mean of the per-token scalar mix: also over the windows of a line
    put together with --doc_stride."""
    encoder, tokenizer = tiny_checkpoint_encoder

    def features():
        return convert_text_examples(EXAMPLES, tokenizer, 8, doc_stride=doc_stride)

    extract_features(encoder, features(), [-1], str(tmp_path / "tokens.jsonl"))
    scalar_mix_file = tmp_path / "mix.json"
    scalar_mix_file.write_text('{"layers": 2, "layer_weights": [0.25, 0.75], "gamma": 2.0}')
    scalar_mix = load_scalar_mix(str(scalar_mix_file), 2)
    extract_features(encoder, features(), None, str(tmp_path / "mix.jsonl"), scalar_mix=scalar_mix)
    per_token = {}
    for name in ("tokens", "mix"):
        lines = [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        per_token[name] = [
            np.array([token["layers"][0]["values"] for token in line["features"]]) for line in lines
        ]
    if doc_stride:
        assert len(per_token["tokens"][2]) == 12  # the whole line, not 8

    pooled = {}
    for pooling in ("cls", "mean", "scalar_mix"):
        path = tmp_path / f"{pooling}.npy"
        count = extract_sentence_embeddings(
            encoder,
            features(),
            str(path),
            pooling,
            num_lines=3,
            output_format="npy",
            batch_size=2,
            scalar_mix=scalar_mix if pooling == "scalar_mix" else None,
        )
        assert count == 3
        pooled[pooling] = np.load(path)
    # The per-token values are rounded to 6 decimals.
    for row in range(3):
        np.testing.assert_allclose(pooled["cls"][row], per_token["tokens"][row][0], atol=1e-6)
        np.testing.assert_allclose(pooled["mean"][row], per_token["tokens"][row].mean(0), atol=1e-6)
        np.testing.assert_allclose(
            pooled["scalar_mix"][row], per_token["mix"][row].mean(0), atol=2e-6
        )


def test_pool_tokens_by_hand():
    vectors = np.array([[3.0, 0.0], [1.0, 2.0], [2.0, 4.0]], np.float32)
    np.testing.assert_array_equal(pool_tokens(vectors, "cls"), [3.0, 0.0])
    np.testing.assert_array_equal(pool_tokens(vectors, "mean"), [2.0, 2.0])
    # [2, 2] / sqrt(8)
    np.testing.assert_allclose(pool_tokens(vectors, "mean", normalize=True), [0.5**0.5] * 2)
    # An all-zero vector stays zero (the clamped norm of sentence-transformers).
    np.testing.assert_array_equal(pool_tokens(np.zeros([2, 3]), "mean", normalize=True), 0.0)
    with pytest.raises(ValueError, match="pooling must be one of"):
        pool_tokens(vectors, "max")


def test_npy_rows_stream_in_batches_and_the_count_is_checked(tmp_path):
    rows = np.arange(7 * 3, dtype=np.float32).reshape(7, 3) / 7
    with NpyRowWriter(str(tmp_path / "m.npy"), 7, 3) as writer:
        writer.write(rows[:4])
        writer.write(rows[4])  # one row
        writer.write(rows[5:])
    np.testing.assert_array_equal(np.load(tmp_path / "m.npy"), rows)
    with pytest.raises(ValueError, match="2 rows written, but its header announces 3"):
        with NpyRowWriter(str(tmp_path / "short.npy"), 3, 3) as writer:
            writer.write(rows[:2])
    with NpyRowWriter(str(tmp_path / "long.npy"), 1, 3) as writer:
        with pytest.raises(ValueError, match="more than the 1 rows its header announces"):
            writer.write(rows[:2])
        with pytest.raises(ValueError, match="rows must have 3 columns, got shape"):
            writer.write(np.zeros([1, 4]))
        writer.write(rows[:1])


def test_count_lines(tmp_path):
    path = tmp_path / "t.txt"
    for content, count in [("a\nb\n", 2), ("a\nb", 2), ("", 0), ("x\n" * 5000, 5000)]:
        path.write_text(content)
        assert count_lines(str(path)) == count


@pytest.mark.parametrize(
    "overrides, fragment",
    [
        ({"output_format": "npy"}, "--output_format=npy needs --pooling"),
        ({"normalize": True}, "--normalize=True needs --pooling"),
        ({"pooling": "mean", "layers": "-1"}, "--layers and --pooling exclude each other"),
        ({"pooling": "scalar_mix"}, "--pooling=scalar_mix needs --scalar_mix_weights"),
        ({"pooling": "median"}, "--pooling must be one of ['cls', 'mean', 'scalar_mix']"),
    ],
)
def test_flags_that_do_not_go_together_are_named(
    tiny_checkpoint_dir, tmp_path, overrides, fragment
):
    text = tmp_path / "input.txt"
    text.write_text("hello\n")
    options = FeatureExtractionOptions(
        input_file=str(text),
        output_file=str(tmp_path / "out"),
        vocab_file=str(tiny_checkpoint_dir / "vocab.txt"),
        init_checkpoint=str(tiny_checkpoint_dir / "bert_model.ckpt"),
        **overrides,
    )
    with pytest.raises(ValueError) as error:
        run_feature_extraction(options)
    assert fragment in str(error.value)
    assert list(tmp_path.iterdir()) == [text]


def test_lines_stream_a_batch_at_a_time(tiny_checkpoint_encoder):
    """Nothing reads the whole input: the first vectors of an endless input come out after one
    batch of examples is read (so a million lines take the memory of a batch)."""
    _, tokenizer = tiny_checkpoint_encoder
    drawn = []

    def endless():
        for index in itertools.count():
            drawn.append(index)
            yield TextExample(index, "the movie was good" if index % 2 else "hello world")

    def forward(inputs):  # each token's "vector" is its id: the outputs show what went in
        return [tf.cast(inputs["input_word_ids"][..., None], tf.float32)]

    features = convert_text_examples(endless(), tokenizer, 8, examples_per_batch=16)
    first = list(itertools.islice(line_outputs(forward, features, 4, trim_padding=True), 10))
    assert [unique_id for unique_id, _, _ in first] == list(range(10))
    assert len(drawn) == 16  # one batch of examples, not the endless rest
    _, tokens, (vectors,) = first[1]
    assert tokens == ["[CLS]", "the", "movie", "was", "good", "[SEP]"]
    assert vectors[:, 0].tolist() == tokenizer.convert_tokens_to_ids(tokens)
