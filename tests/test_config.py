import json

import pytest
from absl import logging as absl_logging

from official_bert.checkpoints.loading import read_bert_config
from official_bert.config import (
    BertConfig,
    BertConfigError,
    check_vocab_matches_config,
    count_vocab_lines,
)


def test_reads_original_config_and_writes_it_like_the_original(original_tiny_dir, tmp_path):
    config = BertConfig.from_json_file(str(original_tiny_dir / "bert_config.json"))
    assert (config.vocab_size, config.hidden_size, config.num_hidden_layers) == (1000, 64, 2)
    assert config.hidden_act == "gelu" and config.type_vocab_size == 2
    path = tmp_path / "bert_config.json"
    config.to_json_file(str(path))
    text = path.read_text()
    # The original's to_json_string: json.dumps(indent=2, sort_keys=True) + "\n".
    original = json.loads((original_tiny_dir / "bert_config.json").read_text())
    assert text == json.dumps(original, indent=2, sort_keys=True) + "\n"
    assert BertConfig.from_json_file(str(path)) == config


def test_unknown_keys_are_kept_and_written_back(tmp_path):
    values = {
        "vocab_size": 10,
        "hidden_size": 8,
        "num_attention_heads": 2,
        "embedding_size": 4,
        "note": {"from": "converter"},
    }
    config = BertConfig.from_dict(values)
    assert config.extra_fields == {"embedding_size": 4, "note": {"from": "converter"}}
    path = tmp_path / "c.json"
    config.to_json_file(str(path))
    written = json.loads(path.read_text())
    assert written["embedding_size"] == 4 and written["note"] == {"from": "converter"}
    assert len(written) == 11 + 2
    assert list(written) == sorted(written)


def test_defaults_are_the_originals():
    config = BertConfig(vocab_size=5)
    assert config.to_dict() == {
        "vocab_size": 5,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": 512,
        "type_vocab_size": 16,
        "initializer_range": 0.02,
    }


def test_a_vocab_longer_than_vocab_size_names_both_numbers_and_files(tmp_path):
    """Its last tokens' ids would have no embedding row: refused."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(f"tok{i}" for i in range(9)) + "\n")
    config_file = tmp_path / "bert_config.json"
    BertConfig(vocab_size=7).to_json_file(str(config_file))
    config = BertConfig.from_json_file(str(config_file))
    with pytest.raises(BertConfigError) as error:
        check_vocab_matches_config(config, str(vocab), str(config_file))
    message = str(error.value)
    assert "9 lines" in message and "vocab_size = 7" in message
    assert str(vocab) in message and str(config_file) in message
    check_vocab_matches_config(BertConfig(vocab_size=9), str(vocab))  # equal: no error


def test_a_vocab_shorter_than_vocab_size_is_a_warning(tmp_path, caplog):
    """An embedding table padded past the vocab (30522 tokens, vocab_size 30528), as the
    original runs it: every id the vocab gives has its row."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(f"tok{i}" for i in range(7)) + "\n")
    caplog.set_level("WARNING", logger=absl_logging.get_absl_logger().name)
    check_vocab_matches_config(BertConfig(vocab_size=8), str(vocab), "bert_config.json")
    assert f"vocab file {vocab} has 7 lines, fewer than vocab_size = 8" in caplog.text


def test_empty_lines_at_the_end_of_the_vocab_are_not_counted(tmp_path):
    """`echo >> vocab.txt` or an editor's last newline: the original reads the vocab fine."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"tok{i}\n" for i in range(7)) + "\n \n")
    assert count_vocab_lines(str(vocab)) == 7
    check_vocab_matches_config(BertConfig(vocab_size=7), str(vocab))


def test_a_utf16_vocab_is_named_as_not_utf8_not_counted(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"tok{i}\n" for i in range(7)), encoding="utf-16")
    with pytest.raises(ValueError, match=r"vocab\.txt is not UTF-8") as error:
        check_vocab_matches_config(BertConfig(vocab_size=7), str(vocab))
    assert "lines" not in str(error.value)


def test_a_folder_as_config_or_vocab_is_named_with_the_file_in_it(tmp_path, tiny_checkpoint_dir):
    """A user who passes $BERT_BASE_DIR: one line naming the flag, not TensorFlow's traceback."""
    folder = str(tiny_checkpoint_dir)
    with pytest.raises(ValueError, match=r"--bert_config_file=.* is a folder.*bert_config\.json\?"):
        read_bert_config(folder)
    with pytest.raises(ValueError, match=r"--vocab_file=.* is a folder.*vocab\.txt\?"):
        check_vocab_matches_config(BertConfig(vocab_size=7), folder)


@pytest.mark.parametrize(
    "values, fragment",
    [
        ({}, "'vocab_size' is missing"),
        ({"vocab_size": 10, "hidden_size": 10, "num_attention_heads": 3}, "not a multiple"),
        ({"vocab_size": "30522"}, "'vocab_size' must be a positive integer"),
        ({"vocab_size": 10, "hidden_dropout_prob": 1.5}, "'hidden_dropout_prob'"),
    ],
)
def test_invalid_configs_are_clear_errors(values, fragment):
    with pytest.raises(BertConfigError, match=fragment):
        BertConfig.from_dict(values, source="x/bert_config.json")


def test_bad_json_and_missing_file_name_the_file(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text('{\n  "vocab_size": 3,\n  oops\n}')
    with pytest.raises(
        BertConfigError, match=r"bert_config.json: not valid JSON at line 3, column 3"
    ):
        BertConfig.from_json_file(str(path))
    with pytest.raises(FileNotFoundError, match="nowhere.json"):
        BertConfig.from_json_file(str(tmp_path / "nowhere.json"))


def test_a_config_not_in_utf8_names_the_file_and_line(tmp_path):
    # An editor's "Unicode" (UTF-16) or a Chinese Windows code page: one line, not Python's
    # UnicodeDecodeError without a file name.
    path = tmp_path / "bert_config.json"
    path.write_bytes('{\n  "vocab_size": 3,\n  "note": "中文"\n}'.encode("gbk"))
    with pytest.raises(BertConfigError, match=r"bert_config.json, line 3 \(byte \d+\): not UTF-8"):
        BertConfig.from_json_file(str(path))


def test_a_config_with_a_byte_order_mark_reads(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_bytes(
        b"\xef\xbb\xbf" + b'{"vocab_size": 3, "hidden_size": 8, "num_attention_heads": 2}'
    )
    assert BertConfig.from_json_file(str(path)).vocab_size == 3
