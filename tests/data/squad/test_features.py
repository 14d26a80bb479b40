"""SQuAD reading, windows and TFRecords, against the original run_squad.py (golden file)."""

import json

import numpy as np
import pytest

from official_bert.data.document_windows import check_is_max_context, doc_spans
from official_bert.data.squad import features as squad_features
from official_bert.data.squad.dataset import squad_dataset
from official_bert.data.squad.examples import SquadFormatError, read_squad_examples
from official_bert.data.squad.features import (
    FIRST_UNIQUE_ID,
    convert_examples_to_features,
    write_squad_records,
)
from official_bert.tokenization import FullTokenizer
from tests.conftest import REPO_ROOT

# Written by tests/fixtures/make_squad_original_golden.py with google-research/bert's
# run_squad.py (bert-tensorflow 1.0.4) on real SQuAD questions and the MiniLM vocab.
GOLDEN = REPO_ROOT / "tests" / "fixtures" / "squad_original_golden.json"


@pytest.fixture(scope="module")
def golden():
    return json.loads(GOLDEN.read_text())


@pytest.fixture(scope="module")
def tokenizer(minilm_dir):
    return FullTokenizer(str(minilm_dir / "vocab.txt"), do_lower_case=True)


def _features(tmp_path, golden, version, tokenizer, is_training):
    path = tmp_path / "input.json"
    path.write_text(json.dumps(golden[version]["input"]))
    examples = read_squad_examples(str(path), is_training, version == "v2").examples
    settings = golden["settings"]
    return examples, convert_examples_to_features(
        examples,
        tokenizer,
        settings["max_seq_length"],
        settings["doc_stride"],
        settings["max_query_length"],
        is_training,
    )


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("is_training", [True, False])
def test_features_equal_the_original(tmp_path, golden, tokenizer, version, is_training):
    _, features = _features(tmp_path, golden, version, tokenizer, is_training)
    expected = golden[version]["train_features" if is_training else "predict_features"]
    assert len(features) == len(expected)
    for ours, theirs in zip(features, expected, strict=True):
        assert ours.unique_id == theirs["unique_id"]
        assert (ours.example_index, ours.doc_span_index) == (
            theirs["example_index"],
            theirs["doc_span_index"],
        )
        assert ours.tokens == theirs["tokens"]
        assert ours.input_ids == theirs["input_ids"]
        assert ours.segment_ids == theirs["segment_ids"]
        assert {str(k): v for k, v in ours.token_to_orig_map.items()} == theirs["token_to_orig_map"]
        assert {str(k): v for k, v in ours.token_is_max_context.items()} == theirs[
            "token_is_max_context"
        ]
        assert (ours.start_position, ours.end_position) == (
            theirs["start_position"],
            theirs["end_position"],
        )
    if is_training:
        # The golden data has answers inside a window, outside it, and impossible questions.
        positions = {(f.start_position, f.end_position) for f in features}
        assert (0, 0) in positions and len(positions) > 3


def test_a_long_context_is_covered_once_with_max_context(tmp_path, golden, tokenizer):
    examples, features = _features(tmp_path, golden, "v1", tokenizer, False)
    assert features[0].unique_id == FIRST_UNIQUE_ID
    assert [f.unique_id for f in features] == list(
        range(FIRST_UNIQUE_ID, FIRST_UNIQUE_ID + len(features))
    )
    num_doc_tokens = sum(len(tokenizer.tokenize(word)) for word in examples[0].doc_tokens)
    first_example = [f for f in features if f.example_index == 0]
    assert len(first_example) >= 3  # the context needs several windows
    max_context = {}
    # Every wordpiece of the document is in a window, and exactly one window is its max context.
    spans = doc_spans(num_doc_tokens, 64 - (first_example[0].tokens.index("[SEP]") - 1) - 3, 24)
    assert len(spans) == len(first_example)
    assert spans[0].start == 0 and spans[-1].start + spans[-1].length == num_doc_tokens
    for token in range(num_doc_tokens):
        owners = [i for i in range(len(spans)) if check_is_max_context(spans, i, token)]
        assert len(owners) == 1
        max_context[token] = owners[0]
    for span_index, (span, feature) in enumerate(zip(spans, first_example, strict=True)):
        offset = feature.tokens.index("[SEP]") + 1
        for i in range(span.length):
            flag = feature.token_is_max_context[offset + i]
            assert flag == (max_context[span.start + i] == span_index)
    # A token in the middle of an overlap belongs to the window where it is most central.
    assert max_context[spans[1].start] == 0 and max_context[spans[0].length - 1] == 1


def test_records_round_trip_through_the_reader(tmp_path, golden, tokenizer, monkeypatch):
    _, features = _features(tmp_path, golden, "v2", tokenizer, True)
    path = str(tmp_path / "train.tf_record")
    write_squad_records(features, path, is_training=True)
    # Written in chunks (4096 features each; 7 here, the last one partial), the same bytes.
    monkeypatch.setattr(squad_features, "_RECORDS_PER_CHUNK", 7)
    assert len(features) % 7 != 0
    write_squad_records(features, str(tmp_path / "chunked.tf_record"), is_training=True)
    assert (tmp_path / "chunked.tf_record").read_bytes() == (
        tmp_path / "train.tf_record"
    ).read_bytes()
    batches = list(squad_dataset(path, 8, 64, is_training=False))
    ids = np.concatenate([b["unique_ids"].numpy() for b in batches])
    assert ids.tolist() == [f.unique_id for f in features]
    first = batches[0]
    assert first["input_word_ids"].shape == (8, 64)
    np.testing.assert_array_equal(first["input_word_ids"][0], features[0].input_ids)
    np.testing.assert_array_equal(first["input_type_ids"][1], features[1].segment_ids)
    starts = np.concatenate([b["start_positions"].numpy() for b in batches])
    assert starts.tolist() == [f.start_position for f in features]
    impossible = np.concatenate([b["is_impossible"].numpy() for b in batches])
    assert impossible.tolist() == [int(f.is_impossible) for f in features]
    assert impossible.any() and not impossible.all()
    with pytest.raises(ValueError, match="max_seq_length 64, but --max_seq_length=128"):
        squad_dataset(path, 8, 128, is_training=False)
    trimmed = next(iter(squad_dataset(path, 4, 64, is_training=True, seed=1, trim_padding=True)))
    assert trimmed["input_word_ids"].shape[1] % 8 == 0


def _squad_file(tmp_path, qas, context="The cat sat on the mat."):
    path = tmp_path / "squad.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": context, "qas": qas}]}]}))
    return str(path)


def test_malformed_json_names_the_place(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"data": [\n{"paragraphs": [}]}')
    with pytest.raises(
        SquadFormatError, match=r"bad.json: not valid JSON at line 2, column 17: Expecting value"
    ):
        read_squad_examples(str(bad), is_training=False)
    path = _squad_file(tmp_path, [{"id": "q1", "question": "Where?", "answers": []}, {"id": "q2"}])
    with pytest.raises(SquadFormatError, match=r"data\[0\]\.paragraphs\[0\]\.qas\[1\]: 'question'"):
        read_squad_examples(path, is_training=False)
    path = _squad_file(tmp_path, [{"id": "q1", "question": "Where?"}])
    with pytest.raises(SquadFormatError, match=r"qas\[0\]: 'answers' missing"):
        read_squad_examples(path, is_training=True)
    path = _squad_file(tmp_path, [{"id": "q1", "question": "Where?", "answers": []}])
    with pytest.raises(SquadFormatError, match=r"qas\[0\]: no answers .*--version_2_with_neg"):
        read_squad_examples(path, is_training=True)
    path = _squad_file(tmp_path, [], context=7)
    with pytest.raises(
        SquadFormatError, match=r"paragraphs\[0\]\.context: expected str, found int"
    ):
        read_squad_examples(path, is_training=False)


def test_a_file_that_is_not_utf8_is_named_with_its_line_and_byte(tmp_path):
    """A DRCD/CMRC file saved as GB18030 (a Chinese Windows user's default) is refused in one
    line that says how to convert it; a UTF-8 byte-order mark is accepted."""
    data = {"data": [{"paragraphs": [{"context": "红烧鱼很有名。", "qas": []}]}]}
    text = json.dumps(data, ensure_ascii=False)
    path = tmp_path / "drcd.json"
    path.write_bytes(text.encode("gb18030"))
    byte = len(text[: text.index("红")].encode("utf-8"))
    with pytest.raises(
        SquadFormatError,
        match=rf"drcd\.json, line 1 \(byte {byte}\): not UTF-8 .*iconv -f GB18030 -t UTF-8",
    ):
        read_squad_examples(str(path), is_training=False)
    path.write_bytes(text.encode("utf-8-sig"))
    assert read_squad_examples(str(path), is_training=False).examples == []


def test_a_version_2_file_without_is_impossible_marks_it_by_empty_answers(tmp_path):
    """SQuAD 2.0 data written without the field (Hugging Face datasets' squad_v2 as JSON):
    an empty answer list is an unanswerable question."""
    qas = [
        {"id": "a", "question": "Where?", "answers": [{"text": "the mat", "answer_start": 15}]},
        {"id": "n", "question": "Who?", "answers": []},
    ]
    read = read_squad_examples(
        _squad_file(tmp_path, qas), is_training=True, version_2_with_negative=True
    )
    assert [(e.qas_id, e.is_impossible) for e in read.examples] == [("a", False), ("n", True)]


def test_an_answer_start_that_does_not_match_is_skipped_and_counted(tmp_path, caplog):
    qas = [
        {"id": "good", "question": "Where?", "answers": [{"text": "the mat", "answer_start": 15}]},
        {"id": "bad", "question": "Who?", "answers": [{"text": "the mat", "answer_start": 4}]},
        {"id": "out", "question": "Who?", "answers": [{"text": "mat", "answer_start": 99}]},
    ]
    read = read_squad_examples(_squad_file(tmp_path, qas), is_training=True)
    assert [e.qas_id for e in read.examples] == ["good"]
    assert read.num_skipped == 2
    example = read.examples[0]
    assert example.doc_tokens[example.start_position : example.end_position + 1] == ["the", "mat."]


def test_max_seq_length_must_leave_room_for_the_document(tokenizer):
    with pytest.raises(ValueError, match=r"max_seq_length \(67\) must be greater than "):
        convert_examples_to_features([], tokenizer, 67, 128, 64, False)
