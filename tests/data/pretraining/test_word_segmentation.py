"""Whole-word masking by words of CJK text: --word_segmenter=jieba and =ref_file (issue 26).

The reference for "a word" is jieba 0.42.1 itself, re-run on the text of each written instance:
independent of the marks the writer carried, so a lost or shifted mark shows up as a split word.
"""

import importlib.util
import json

import numpy as np
import pytest
import tensorflow as tf

from official_bert.data.pretraining.data_writer import (
    PretrainingDataSettings,
    write_pretraining_examples,
)
from official_bert.data.pretraining.features import pretraining_feature_spec
from official_bert.data.pretraining.instances import Instance, TokenizedDocument, pack_instances
from official_bert.data.pretraining.word_segmentation import (
    WordReference,
    attach_word_references,
    is_cjk_character,
    word_continuation_marks,
)
from official_bert.data.text_corpus import read_corpus_chunks
from official_bert.tokenization import FastWordpieceBertTokenizer, load_vocab
from tests.conftest import REPO_ROOT, SHARED_DATA

jieba = pytest.importorskip("jieba", reason="needs jieba: pip install -e '.[zh]'")

ZH_CORPUS = REPO_ROOT / "samples" / "zh" / "pretraining_corpus.txt"
ZH_VOCAB = REPO_ROOT / "samples" / "zh" / "vocab.txt"
BERT_BASE_CHINESE_VOCAB = SHARED_DATA / "zh" / "vocab" / "bert-base-chinese_vocab.txt"
DRCD_DEV = SHARED_DATA / "zh" / "drcd" / "dev_simplified.json"


def _settings(vocab_file, **overrides):
    values = dict(
        vocab_file=str(vocab_file),
        dupe_factor=3,
        word_segmenter="jieba",
        decide_per_word=True,
        random_seed=7,
    )
    values.update(overrides)
    return PretrainingDataSettings(**values)


def _read(path):
    # The parse spec of the original run_pretraining.py (features.py writes it out).
    spec = pretraining_feature_spec(128, 20)
    return [
        {k: v.numpy() for k, v in tf.io.parse_single_example(record, spec).items()}
        for record in tf.data.TFRecordDataset(str(path))
    ]


def _whole_word_counts(examples, vocab_file):
    """(words masked whole, words masked in part): the multi-character CJK words, by jieba on
    each segment's text, that have a masked character."""
    tokens_by_id = {index: token for token, index in load_vocab(vocab_file).items()}
    whole = partial = 0
    for example in examples:
        count = int(example["masked_lm_weights"].sum())
        positions = example["masked_lm_positions"][:count]
        ids = example["input_ids"].copy()
        ids[positions] = example["masked_lm_ids"][:count]
        masked = set(positions.tolist())
        tokens = [tokens_by_id[i] for i in ids[: int(example["input_mask"].sum())]]
        segments, current = [], []
        for position, token in enumerate(tokens):
            if token in ("[CLS]", "[SEP]"):
                segments.append(current)
                current = []
            else:
                current.append(position)
        for segment in segments:
            characters, owners = [], []
            for position in segment:
                for character in tokens[position].removeprefix("##"):
                    characters.append(character)
                    owners.append(position)
            start = 0
            for word in jieba.lcut("".join(characters)):
                word_positions = owners[start : start + len(word)]
                start += len(word)
                if len(word) > 1 and all(is_cjk_character(c) for c in word):
                    hits = [p in masked for p in word_positions]
                    if any(hits):
                        whole += all(hits)
                        partial += not all(hits)
    return whole, partial


def _check_acceptance(corpus, vocab_file, tmp_path, **overrides):
    output = tmp_path / "zh.tfrecord"
    settings = _settings(vocab_file, **overrides)
    summary = write_pretraining_examples([str(corpus)], [str(output)], settings, num_workers=1)
    examples = _read(output)  # parses with the original's feature spec
    assert len(examples) == summary["instances"] > 50
    whole, partial = _whole_word_counts(examples, vocab_file)
    assert whole > 500
    assert whole / (whole + partial) >= 0.95, (whole, partial)
    assert abs(summary["fraction_predicted_of_eligible"] - 0.15) <= 0.015
    # The summary says what the records were made with: whole words, though the flag is off.
    assert summary["settings"]["do_whole_word_mask"] is True
    for example in examples:  # the budget holds
        assert example["masked_lm_weights"].sum() <= 20
    return whole, partial


def test_jieba_masks_whole_words_on_the_shipped_sample(tmp_path):
    whole, partial = _check_acceptance(ZH_CORPUS, ZH_VOCAB, tmp_path)
    # What --do_whole_word_mask alone gives (each ideograph its own word), measured the same
    # way: the 6.8%; jieba's words must do far better than that.
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    settings = _settings(ZH_VOCAB, word_segmenter="none", do_whole_word_mask=True)
    write_pretraining_examples(
        [str(ZH_CORPUS)], [str(baseline / "b.tfrecord")], settings, num_workers=1
    )
    base_whole, base_partial = _whole_word_counts(_read(baseline / "b.tfrecord"), ZH_VOCAB)
    assert base_whole / (base_whole + base_partial) < 0.2


@pytest.mark.skipif(
    not (DRCD_DEV.exists() and BERT_BASE_CHINESE_VOCAB.exists()),
    reason=f"reads DRCD and the bert-base-chinese vocab from {SHARED_DATA}",
)
def test_jieba_masks_whole_words_on_other_prose_with_the_released_vocab(tmp_path):
    """DRCD's paragraphs (Wikipedia prose, simplified), a sentence a line, the bert-base-chinese
    vocab (where some characters are [UNK] and digits and Latin text have "##" pieces)."""
    data = json.loads(DRCD_DEV.read_text(encoding="utf-8"))
    documents = []
    for article in data["data"][:12]:
        for paragraph in article["paragraphs"]:
            text = paragraph["context"].strip()
            sentences = [s for s in text.replace("。", "。\n").splitlines() if s.strip()]
            documents.append("\n".join(sentences))
    corpus = tmp_path / "drcd.txt"
    corpus.write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    _check_acceptance(corpus, BERT_BASE_CHINESE_VOCAB, tmp_path, max_ngram_size=2)


def test_ngram_masking_and_mlm_only_keep_words_whole(tmp_path):
    _check_acceptance(ZH_CORPUS, ZH_VOCAB, tmp_path, max_ngram_size=3, next_sentence=False)


def test_parallel_writer_writes_the_same_bytes(tmp_path):
    settings = _settings(ZH_VOCAB, dupe_factor=2, chunk_bytes=2000)
    outputs = []
    for workers in (1, 2):
        output = tmp_path / f"w{workers}.tfrecord"
        summary = write_pretraining_examples(
            [str(ZH_CORPUS)],
            [str(output)],
            settings,
            num_workers=workers,
            wait_for_helpers=True,
        )
        if workers == 2:
            assert summary["chunks_processed_in_helpers"] > 0
        outputs.append(output.read_bytes())
    assert outputs[0] == outputs[1]


def _reference_lines(corpus, vocab_file):
    """The ref file run_chinese_ref.py would write with jieba as its segmenter: per non-blank
    line, the positions ([CLS] = 0) of the CJK pieces that continue a word."""
    tokenizer = FastWordpieceBertTokenizer(str(vocab_file))
    no_continuation = np.zeros(tokenizer.vocab_size, bool)
    lines = [
        line.strip() for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    from official_bert.data.pretraining.word_segmentation import JiebaWordSegmenter

    _, splits, marks = word_continuation_marks(
        tokenizer, lines, no_continuation, segmenter=JiebaWordSegmenter()
    )
    return [
        json.dumps([int(p) + 1 for p in np.flatnonzero(marks[splits[i] : splits[i + 1]])])
        for i in range(len(lines))
    ]


def test_a_reference_file_gives_the_words_it_names(tmp_path):
    """A ref file holding jieba's words gives the very records --word_segmenter=jieba gives."""
    lines = _reference_lines(ZH_CORPUS, ZH_VOCAB)
    assert lines[0] != "[]"
    reference = tmp_path / "ref.txt"
    reference.write_text("\n".join(lines) + "\n", encoding="utf-8")
    by_jieba = tmp_path / "jieba.tfrecord"
    by_reference = tmp_path / "ref.tfrecord"
    write_pretraining_examples(
        [str(ZH_CORPUS)], [str(by_jieba)], _settings(ZH_VOCAB, chunk_bytes=4000), num_workers=1
    )
    write_pretraining_examples(
        [str(ZH_CORPUS)],
        [str(by_reference)],
        _settings(
            ZH_VOCAB, chunk_bytes=4000, word_segmenter="ref_file", word_ref_files=(str(reference),)
        ),
        num_workers=1,
    )
    assert by_jieba.read_bytes() == by_reference.read_bytes()


def test_reference_file_errors_name_the_file_and_line(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("我们喜欢读书。\n天气很好。\n\n自然语言处理。\n", encoding="utf-8")
    chunks = list(read_corpus_chunks([str(corpus)], 10, 1 << 20))

    short = tmp_path / "short.txt"
    short.write_text("[2]\n[]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="ends before the corpus"):
        list(attach_word_references(iter(chunks), [str(short)]))

    long = tmp_path / "long.txt"
    long.write_text("[2]\n[]\n[2, 4]\n[]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"long.txt:4: .* more lines"):
        list(attach_word_references(iter(chunks), [str(long)]))

    not_json = tmp_path / "bad.txt"
    not_json.write_text("[2]\n2, 3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:2: not JSON"):
        list(attach_word_references(iter(chunks), [str(not_json)]))

    not_a_list = tmp_path / "dict.txt"
    not_a_list.write_text('{"a": 2}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"dict.txt:1: expected a JSON list of integers"):
        list(attach_word_references(iter(chunks), [str(not_a_list)]))

    tokenizer = FastWordpieceBertTokenizer(str(ZH_VOCAB))
    outside = [WordReference((9,), "ref.txt:1")]  # "天气很好。" has 5 pieces
    with pytest.raises(ValueError, match=r"ref.txt:1: position 9 is outside the line's 5"):
        word_continuation_marks(
            tokenizer, ["天气很好。"], np.zeros(tokenizer.vocab_size, bool), references=outside
        )


def test_marks_follow_jieba_words_and_the_double_hash_rule(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(
        "\n".join(
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"我喜欢自然语言处理。", "play", "##ing"]
        )
        + "\n",
        encoding="utf-8",
    )
    tokenizer = FastWordpieceBertTokenizer(str(vocab))
    is_continuation = np.array([t.startswith("##") for t in tokenizer.tokens_by_id])
    from official_bert.data.pretraining.word_segmentation import JiebaWordSegmenter

    segmenter = JiebaWordSegmenter()
    line = "我喜欢playing自然语言处理。"
    assert segmenter.words("我喜欢自然语言处理") == ["我", "喜欢", "自然语言", "处理"]
    ids, splits, marks = word_continuation_marks(
        tokenizer, [line, "处理"], is_continuation, segmenter=segmenter
    )
    assert tokenizer.convert_ids_to_tokens(ids[: splits[1]]) == [
        "我", "喜", "欢", "play", "##ing", "自", "然", "语", "言", "处", "理", "。",
    ]  # fmt: skip
    assert marks[: splits[1]].tolist() == [
        False, False, True, False, True, False, True, True, True, False, True, False,
    ]  # fmt: skip
    assert marks[splits[1] :].tolist() == [False, True]  # a line starts a word


def test_packed_instances_carry_the_marks():
    document = TokenizedDocument.from_sentences(
        [np.array([10, 11, 12]), np.array([13, 14])],
        [np.array([False, True, True]), np.array([False, True])],
    )
    packed = pack_instances(
        [Instance(0, 1, 3, 0, 3, 5, False, False)], [document], 8, cls_id=2, sep_id=3
    )
    assert packed.input_ids[0].tolist() == [2, 11, 12, 3, 13, 14, 3, 0]
    assert packed.continues_word[0].tolist() == [False, True, True, False, False, True] + [
        False,
        False,
    ]


@pytest.mark.beam
@pytest.mark.skipif(
    importlib.util.find_spec("apache_beam") is None,
    reason='apache-beam is not installed: pip install -e ".[beam]" (docs/beam.md)',
)
def test_the_beam_pipeline_masks_jieba_words_whole(tmp_path):
    from official_bert.data.pretraining.beam_pipeline import write_pretraining_examples_with_beam

    settings = _settings(ZH_VOCAB)
    summary = write_pretraining_examples_with_beam(
        [str(ZH_CORPUS)], str(tmp_path / "zh"), 2, settings, "--runner=DirectRunner"
    )
    examples = [record for path in summary["output_files"] for record in _read(path)]
    assert len(examples) == summary["instances"] > 50
    whole, partial = _whole_word_counts(examples, ZH_VOCAB)
    assert whole > 500
    assert whole / (whole + partial) >= 0.95, (whole, partial)
    assert abs(summary["fraction_predicted_of_eligible"] - 0.15) <= 0.015
    assert summary["settings"]["do_whole_word_mask"] is True
