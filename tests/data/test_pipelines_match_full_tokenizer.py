"""The pipelines' fast tokenization against FullTokenizer, the oracle: SQuAD windows (per-word
pieces, word<->piece maps, answer spans), tagged words and extract_features inputs give the
ids and alignments of the original code run with FullTokenizer.

A sample written below (accents, combining marks, Greek sigmas, Turkish dotted I, control and
format characters, spaces the SQuAD reader keeps inside words, CJK, words over 200 characters)
always runs, on a vocabulary built from it; real data from ../shared adds SQuAD v1.1/v2.0 dev,
DRCD (Chinese), MSRA NER, GLUE and Hong Lou Meng text when present.
"""

import json

import numpy as np
import pytest

from official_bert.data.document_windows import check_is_max_context, doc_spans
from official_bert.data.feature_extraction_inputs import TextExample, convert_text_examples
from official_bert.data.squad.examples import read_squad_examples
from official_bert.data.squad.features import (
    FIRST_UNIQUE_ID,
    convert_examples_to_features,
)
from official_bert.tokenization import BasicTokenizer, FastWordpieceBertTokenizer, FullTokenizer
from tests.conftest import SHARED
from tests.data.test_bert_input_packer import _original_packing

SHARED_DATA = SHARED / "data"
CHINESE_VOCAB = SHARED_DATA / "zh" / "vocab" / "bert-base-chinese_vocab.txt"

LONG_WORD = "x" * 250
LONG_ACCENTED_WORD = "é" * 201
LONGEST_KEPT_WORD = "y" * 200

# (context, [(question, answer text, which occurrence of the answer in the context)]).
SAMPLE_PARAGRAPHS = [
    (
        "Café Müller opened in 1895 (1895-1943). Its naïve résumé\u00a0was\u200bwritten by "
        "Ångström's heir, ΟΔΟΣ ΣΟΦΟΣ, in İstanbul; e\u0301te\u0301 \u2028 came later.",
        [
            ("When did Café Müller open?", "1895", 1),
            ("Who wrote the résumé?", "Ångström's heir", 0),
            ("Which road?", "ΟΔΟΣ", 0),
            ("WHERE WAS IT?", "İstanbul", 0),
        ],
    ),
    (
        "北京大学成立于1898年，是中国第一所国立综合性大学。Peking University\u3000was founded "
        "in 1898 by the 光绪皇帝 (Guangxu\u202fEmperor).",
        [
            ("北京大学成立于哪一年？", "1898", 0),
            ("Who founded Peking University?", "光绪皇帝", 0),
            ("Who?", "Guangxu", 0),
        ],
    ),
    (
        "Control \x07\x08 words: a\x00b, soft\u00adhyphen, tab\there, odd\ufffdchar and a "
        f"bell-only word \x07 between. {LONG_WORD} is too long, {LONG_ACCENTED_WORD} too, but "
        f"{LONGEST_KEPT_WORD} fits. The\ufeffend of the paragraph has several more words so "
        "that the windows overlap: one two three four five six seven eight nine ten eleven.",
        [
            ("Which word fits?", "fits", 0),
            ("What is too long?", LONG_WORD, 0),
            ("What\x00 comes between\u200b?", "between", 0),
            ("How many?", "eleven", 0),
        ],
    ),
]


def _sample_squad(version_2: bool) -> dict:
    paragraphs = []
    for index, (context, questions) in enumerate(SAMPLE_PARAGRAPHS):
        qas = []
        for number, (question, answer, occurrence) in enumerate(questions):
            start = -1
            for _ in range(occurrence + 1):
                start = context.index(answer, start + 1)
            qas.append(
                {
                    "id": f"q{index}-{number}",
                    "question": question,
                    "answers": [{"text": answer, "answer_start": start}],
                    "is_impossible": False,
                }
            )
        if version_2:
            qas.append(
                {"id": f"q{index}-none", "question": "Why?", "answers": [], "is_impossible": True}
            )
        paragraphs.append({"context": context, "qas": qas})
    return {"version": "sample", "data": [{"title": "sample", "paragraphs": paragraphs}]}


def _sample_texts() -> list[str]:
    return [text for context, qas in SAMPLE_PARAGRAPHS for text in [context, *(q for q, *_ in qas)]]


@pytest.fixture(scope="module")
def sample_vocab(tmp_path_factory):
    """A vocabulary made from the sample's words, cased and uncased: a third of them whole,
    a third as a two-character prefix and "##" characters, a third absent ([UNK])."""
    words = sorted(
        {
            word
            for do_lower_case in (True, False)
            for text in _sample_texts()
            for word in BasicTokenizer(do_lower_case).tokenize(text)
            if len(word) <= 200
        }
    )
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    for index, word in enumerate(words):
        if index % 3 == 0:
            tokens.append(word)
        elif index % 3 == 1:
            tokens += [word[:2], *(f"##{char}" for char in word[2:])]
    tokens.append(LONGEST_KEPT_WORD)
    path = tmp_path_factory.mktemp("sample_vocab") / "vocab.txt"
    path.write_text("".join(f"{token}\n" for token in dict.fromkeys(tokens)), encoding="utf-8")
    return str(path)


# === The oracle: the original run_squad.py convert_examples_to_features, with FullTokenizer ===


def _original_improve_answer_span(doc_tokens, input_start, input_end, tokenizer, answer_text):
    tok_answer_text = " ".join(tokenizer.tokenize(answer_text))
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            if " ".join(doc_tokens[new_start : (new_end + 1)]) == tok_answer_text:
                return new_start, new_end
    return input_start, input_end


def _original_squad_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length):
    """The original's features (as dicts), each whitespace word tokenized on its own."""
    features = []
    for example_index, example in enumerate(examples):
        query_tokens = tokenizer.tokenize(example.question_text)[:max_query_length]
        tok_to_orig_index, orig_to_tok_index, all_doc_tokens = [], [], []
        for index, token in enumerate(example.doc_tokens):
            orig_to_tok_index.append(len(all_doc_tokens))
            for sub_token in tokenizer.tokenize(token):
                tok_to_orig_index.append(index)
                all_doc_tokens.append(sub_token)
        tok_start = tok_end = None
        if example.start_position is not None and not example.is_impossible:
            tok_start = orig_to_tok_index[example.start_position]
            if example.end_position < len(example.doc_tokens) - 1:
                tok_end = orig_to_tok_index[example.end_position + 1] - 1
            else:
                tok_end = len(all_doc_tokens) - 1
            tok_start, tok_end = _original_improve_answer_span(
                all_doc_tokens, tok_start, tok_end, tokenizer, example.orig_answer_text
            )
        max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
        spans = doc_spans(len(all_doc_tokens), max_tokens_for_doc, doc_stride)
        for span_index, span in enumerate(spans):
            tokens = ["[CLS]", *query_tokens, "[SEP]"]
            segment_ids = [0] * len(tokens)
            token_to_orig_map, token_is_max_context = {}, {}
            for i in range(span.length):
                split_token_index = span.start + i
                token_to_orig_map[len(tokens)] = tok_to_orig_index[split_token_index]
                token_is_max_context[len(tokens)] = check_is_max_context(
                    spans, span_index, split_token_index
                )
                tokens.append(all_doc_tokens[split_token_index])
                segment_ids.append(1)
            tokens.append("[SEP]")
            segment_ids.append(1)
            input_ids = tokenizer.convert_tokens_to_ids(tokens)
            padding = [0] * (max_seq_length - len(input_ids))
            start_position = end_position = None
            if example.start_position is not None:
                start_position = end_position = 0
                doc_end = span.start + span.length - 1
                if tok_start is not None and span.start <= tok_start and tok_end <= doc_end:
                    doc_offset = len(query_tokens) + 2
                    start_position = tok_start - span.start + doc_offset
                    end_position = tok_end - span.start + doc_offset
            features.append(
                {
                    "unique_id": FIRST_UNIQUE_ID + len(features),
                    "example_index": example_index,
                    "doc_span_index": span_index,
                    "tokens": tokens,
                    "token_to_orig_map": token_to_orig_map,
                    "token_is_max_context": token_is_max_context,
                    "input_ids": input_ids + padding,
                    "input_mask": [1] * len(input_ids) + padding,
                    "segment_ids": segment_ids + padding,
                    "start_position": start_position,
                    "end_position": end_position,
                }
            )
    return features


def _assert_squad_features_equal_the_oracle(
    path, vocab_file, do_lower_case, is_training, version_2, settings=(64, 24, 16)
):
    examples = read_squad_examples(str(path), is_training, version_2).examples
    assert examples
    oracle = FullTokenizer(vocab_file, do_lower_case)
    fast = FastWordpieceBertTokenizer(vocab_file, do_lower_case)
    features = convert_examples_to_features(examples, fast, *settings, is_training)
    expected = _original_squad_features(examples, oracle, *settings)
    assert len(features) == len(expected)
    for ours, theirs in zip(features, expected, strict=True):
        ours = {name: getattr(ours, name) for name in theirs}
        assert ours == theirs, (ours["unique_id"], examples[ours["example_index"]].qas_id)
    return examples, features


@pytest.mark.parametrize("do_lower_case", [True, False])
@pytest.mark.parametrize("is_training", [True, False])
def test_squad_sample_equals_the_oracle(tmp_path, sample_vocab, do_lower_case, is_training):
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(_sample_squad(version_2=True)), encoding="utf-8")
    examples, features = _assert_squad_features_equal_the_oracle(
        path, sample_vocab, do_lower_case, is_training, True, (40, 12, 10)
    )
    # The sample reaches the cases it is written for: several windows per context, [UNK] for
    # the long words, a doc word (the bell alone) without pieces, answers inside and outside.
    assert len(features) > 3 * len(examples) / 2
    unk = FullTokenizer(sample_vocab).vocab["[UNK]"]
    assert any(unk in feature.input_ids for feature in features)
    oracle = FullTokenizer(sample_vocab, do_lower_case)
    assert oracle.tokenize(LONG_WORD) == ["[UNK]"] and oracle.tokenize("\x07") == []
    assert any("\x07" in example.doc_tokens for example in examples)
    if is_training:
        positions = {(f.start_position, f.end_position) for f in features}
        assert (0, 0) in positions and len(positions) > 5


def _first_paragraphs(source, target, count):
    data = json.loads(source.read_text(encoding="utf-8"))["data"]
    paragraphs = [paragraph for article in data for paragraph in article["paragraphs"]]
    target.write_text(json.dumps({"data": [{"paragraphs": paragraphs[:count]}]}), encoding="utf-8")
    return target


@pytest.mark.parametrize(
    "file_name, paragraphs, version_2, vocab",
    [
        ("squad/dev-v1.1.json", 120, False, "minilm"),
        ("squad/dev-v2.0-small.json", 100, True, "minilm"),
        ("squad/cs224n-dev-v2.0.json", 40, True, "minilm"),
        ("zh/drcd/dev_simplified.json", 15, False, "chinese"),
    ],
)
@pytest.mark.parametrize("is_training", [True, False])
def test_squad_real_data_equals_the_oracle(
    tmp_path, request, file_name, paragraphs, version_2, vocab, is_training
):
    source = SHARED_DATA / file_name
    if not source.exists():
        pytest.skip(f"not present: {source}")
    if vocab == "chinese":
        if not CHINESE_VOCAB.exists():
            pytest.skip(f"not present: {CHINESE_VOCAB}")
        vocab_file = str(CHINESE_VOCAB)
    else:
        vocab_file = str(request.getfixturevalue("minilm_dir") / "vocab.txt")
    path = _first_paragraphs(source, tmp_path / "squad.json", paragraphs)
    _assert_squad_features_equal_the_oracle(path, vocab_file, True, is_training, version_2)


# === Words one by one (tagging, SQuAD contexts) ===


def _assert_words_equal_the_oracle(words, vocab_file, do_lower_case):
    oracle = FullTokenizer(vocab_file, do_lower_case)
    ids, row_splits = FastWordpieceBertTokenizer(vocab_file, do_lower_case).tokenize_in_batches(
        words, batch_size=997
    )
    assert len(row_splits) == len(words) + 1
    for index, word in enumerate(words):
        expected = oracle.convert_tokens_to_ids(oracle.tokenize(word))
        assert ids[row_splits[index] : row_splits[index + 1]].tolist() == expected, repr(word)


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_sample_words_equal_the_oracle(sample_vocab, do_lower_case):
    words = [word for text in _sample_texts() for word in text.split(" ")]
    words += ["", " ", "\x07", "\u00ad", "a\u00a0b", LONG_WORD, LONG_ACCENTED_WORD]
    _assert_words_equal_the_oracle(words, sample_vocab, do_lower_case)


def _words_of_lines(path, count, separator=None):
    lines = path.read_text(encoding="utf-8").split("\n")[:count]
    return [word for line in lines for word in line.split(separator)]


@pytest.mark.parametrize(
    "file_name, vocab, do_lower_case",
    [
        ("glue/MRPC/dev.tsv", "minilm", True),
        ("glue/CoLA/dev.tsv", "minilm", False),
        ("zh/msra_ner/dev.txt", "chinese", True),
        ("zh/text/hongloumeng_traditional_pg24264.txt", "chinese", True),
    ],
)
def test_real_words_equal_the_oracle(request, file_name, vocab, do_lower_case):
    source = SHARED_DATA / file_name
    vocab_path = CHINESE_VOCAB if vocab == "chinese" else None
    if not source.exists() or (vocab_path is not None and not vocab_path.exists()):
        pytest.skip(f"not present: {source} or {vocab_path}")
    if vocab_path is None:
        vocab_path = request.getfixturevalue("minilm_dir") / "vocab.txt"
    # Whitespace words (SQuAD's, CoNLL's first column) and, for the novel, whole lines
    # split at the ideographic space only, so that the words mix scripts and punctuation.
    words = _words_of_lines(source, 400)
    if "hongloumeng" in file_name:
        words = _words_of_lines(source, 400, "\u3000")
    _assert_words_equal_the_oracle(words, str(vocab_path), do_lower_case)


# === extract_features inputs ===


def _assert_text_features_equal_the_oracle(examples, vocab_file, max_seq_length):
    oracle = FullTokenizer(vocab_file, do_lower_case=True)
    features = list(
        convert_text_examples(
            examples,
            FastWordpieceBertTokenizer(vocab_file),
            max_seq_length,
            examples_per_batch=7,
        )
    )
    assert [f.unique_id for f in features] == [e.unique_id for e in examples]
    for feature, example in zip(features, examples, strict=True):
        tokens_b = None if example.text_b is None else oracle.tokenize(example.text_b)
        tokens, mask, segment_ids = _original_packing(
            oracle.tokenize(example.text_a), tokens_b, max_seq_length
        )
        real = sum(mask)
        assert feature.tokens == tokens[:real]
        assert feature.input_ids == oracle.convert_tokens_to_ids(tokens[:real]) + tokens[real:]
        assert (feature.input_mask, feature.input_type_ids) == (mask, segment_ids)


def test_sample_text_features_equal_the_oracle(sample_vocab):
    texts = _sample_texts()
    # Singles and pairs mixed within a batch, as lines of an extract_features.py input file.
    examples = [
        TextExample(index, text, texts[-index] if index % 3 else None)
        for index, text in enumerate(texts)
    ]
    _assert_text_features_equal_the_oracle(examples, sample_vocab, 24)


def test_glue_text_features_equal_the_oracle(minilm_dir):
    source = SHARED_DATA / "glue" / "MRPC" / "dev.tsv"
    if not source.exists():
        pytest.skip(f"not present: {source}")
    rows = [line.split("\t") for line in source.read_text(encoding="utf-8").split("\n")[1:200]]
    examples = [
        TextExample(index, row[3], row[4] if index % 2 else None)
        for index, row in enumerate(rows)
        if len(row) == 5
    ]
    _assert_text_features_equal_the_oracle(examples, str(minilm_dir / "vocab.txt"), 40)


def test_a_full_tokenizer_given_to_a_pipeline_runs_its_fast_twin(sample_vocab):
    from official_bert.tokenization import as_fast_tokenizer

    oracle = FullTokenizer(sample_vocab, do_lower_case=False)
    fast = as_fast_tokenizer(oracle)
    assert isinstance(fast, FastWordpieceBertTokenizer)
    assert as_fast_tokenizer(oracle) is fast and as_fast_tokenizer(fast) is fast
    assert fast.do_lower_case is False
    text = "Café Müller ΟΔΟΣ"
    np.testing.assert_array_equal(
        fast.tokenize([text]).flat_values.numpy(),
        oracle.convert_tokens_to_ids(oracle.tokenize(text)),
    )
    with pytest.raises(TypeError, match="FastWordpieceBertTokenizer or a FullTokenizer"):
        as_fast_tokenizer("vocab.txt")
