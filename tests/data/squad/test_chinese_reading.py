"""Chinese reading comprehension (CMRC 2018, DRCD) in the SQuAD reader and features: CJK
ideographs as document tokens, the gold span from answer_start (not the first occurrence), the
linear answer-span search, the shipped sample, and real DRCD (skipped when absent)."""

import json
import logging
import random

import pytest

from official_bert.config import BertConfig, count_vocab_lines
from official_bert.data.squad.examples import (
    join_doc_tokens,
    read_squad_examples,
    split_context,
)
from official_bert.data.squad.features import convert_examples_to_features, improve_answer_span
from official_bert.tokenization import FastWordpieceBertTokenizer, _is_chinese_char
from tests.conftest import REPO_ROOT, SHARED_DATA

ZH = REPO_ROOT / "samples" / "zh"
ZH_VOCAB = ZH / "vocab.txt"
READING = ZH / "reading"
DRCD_DEV = SHARED_DATA / "zh" / "drcd" / "dev_simplified.json"
BERT_BASE_CHINESE_VOCAB = SHARED_DATA / "zh" / "vocab" / "bert-base-chinese_vocab.txt"

# The fish dish is named twice; the second question asks about the second mention.
CONTEXT = "这家饭店的红烧鱼很有名。很多客人从外地开车来吃红烧鱼，2018年价格是80元。"
SECOND = CONTEXT.index("红烧鱼", CONTEXT.index("红烧鱼") + 1)


def _write(tmp_path, qas, context=CONTEXT, name="cmrc.json"):
    path = tmp_path / name
    data = {"version": "1.1", "data": [{"paragraphs": [{"context": context, "qas": qas}]}]}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return str(path)


def _word_starts(context):
    """For each doc token of split_context(context), the offset of its first character."""
    _, char_to_word_offset, _ = split_context(context)
    starts = {}
    # Whitespace maps to the word before it, so a word's first offset is its first character.
    for offset, word in enumerate(char_to_word_offset):
        starts.setdefault(word, offset)
    return [starts[word] for word in range(max(starts) + 1)]


def test_each_ideograph_is_a_token_and_other_text_splits_on_whitespace():
    tokens, char_to_word_offset, space_before = split_context("2018年世界杯")
    assert tokens == ["2018", "年", "世", "界", "杯"]
    assert char_to_word_offset == [0, 0, 0, 0, 1, 2, 3, 4]
    assert space_before == [True, False, False, False, False]
    tokens, _, space_before = split_context("他用 Python 3 写了《红楼梦》的索引")
    assert tokens == list("他用") + ["Python", "3"] + list("写了《红楼梦》的索引")
    # Rebuilt: spaces where the context had them, none between ideographs or punctuation.
    assert join_doc_tokens(tokens, space_before, 1, 5) == "用 Python 3 写了"
    assert join_doc_tokens(tokens, space_before, 6, 11) == "《红楼梦》的"
    # A space between two ideographs is the context's, kept as the original's " ".join kept
    # it: answers are text of their context (DRCD writes "ＩＢＭ 於 1911年 成立").
    tokens, _, space_before = split_context("中国 人民")
    assert join_doc_tokens(tokens, space_before, 0, 3) == "中国 人民"


def test_english_contexts_split_exactly_as_the_original(tmp_path):
    context = "The cat  sat on\tthe mat.\u202fEnd (1895-1943)."
    tokens, char_to_word_offset, space_before = split_context(context)
    assert tokens == ["The", "cat", "sat", "on", "the", "mat.", "End", "(1895-1943)."]
    assert all(space_before)
    assert char_to_word_offset[:9] == [0, 0, 0, 0, 1, 1, 1, 1, 1]
    qas = [{"id": "q", "question": "Where?", "answers": [{"text": "the mat", "answer_start": 16}]}]
    (example,) = read_squad_examples(_write(tmp_path, qas, context), True).examples
    # No CJK: the example joins its words as the original (" ".join), space_before None.
    assert example.space_before is None
    assert (example.start_position, example.end_position) == (4, 5)


def test_the_training_span_is_the_occurrence_answer_start_names(tmp_path):
    qas = [
        {
            "id": "first",
            "question": "什么菜很有名？",
            "answers": [{"text": "红烧鱼", "answer_start": 5}],
        },
        {
            "id": "second",
            "question": "客人开车来吃什么？",
            "answers": [{"text": "红烧鱼", "answer_start": SECOND}],
        },
        {
            "id": "mixed",
            "question": "哪一年？",
            "answers": [{"text": "2018年", "answer_start": 27}],
        },
    ]
    assert CONTEXT[27:32] == "2018年" and SECOND == 23
    read = read_squad_examples(_write(tmp_path, qas), is_training=True)
    assert read.num_skipped == 0
    first, second, mixed = read.examples
    starts = _word_starts(CONTEXT)
    assert starts[first.start_position] == 5 and starts[second.start_position] == SECOND
    assert second.doc_tokens[second.start_position : second.end_position + 1] == ["红", "烧", "鱼"]
    # Full-width punctuation is no ideograph: "，2018" is one word, as "(1895" would be; the
    # wordpiece span below is still exactly the answer (improve_answer_span).
    assert mixed.doc_tokens[mixed.start_position : mixed.end_position + 1] == ["，2018", "年"]

    tokenizer = FastWordpieceBertTokenizer(str(ZH_VOCAB), do_lower_case=True)
    features = convert_examples_to_features(read.examples, tokenizer, 64, 32, 16, True)
    assert len(features) == 3  # one window each
    for feature, example in zip(features, read.examples, strict=True):
        start, end = feature.start_position, feature.end_position
        # The labelled pieces lie in the words answer_start names.
        assert feature.token_to_orig_map[start] == example.start_position
        assert feature.token_to_orig_map[end] == example.end_position
    assert features[1].tokens[features[1].start_position : features[1].end_position + 1] == [
        "红",
        "烧",
        "鱼",
    ]
    assert features[2].tokens[features[2].start_position : features[2].end_position + 1] == [
        "2",
        "##0",
        "##1",
        "##8",
        "年",
    ]
    # The first and second mentions are different labels (the original gave both the first).
    labelled_words = [f.token_to_orig_map[f.start_position] for f in features[:2]]
    assert labelled_words == [first.start_position, second.start_position]
    assert first.start_position != second.start_position


def test_an_answer_start_that_does_not_match_is_counted_and_skipped(tmp_path, caplog):
    qas = [
        {
            "id": "good",
            "question": "吃什么？",
            "answers": [{"text": "红烧鱼", "answer_start": SECOND}],
        },
        {
            "id": "shifted",
            "question": "吃什么？",
            "answers": [{"text": "红烧鱼", "answer_start": 6}],
        },
        {"id": "outside", "question": "吃什么？", "answers": [{"text": "鱼", "answer_start": 99}]},
    ]
    with caplog.at_level(logging.WARNING):
        read = read_squad_examples(_write(tmp_path, qas), is_training=True)
    assert [example.qas_id for example in read.examples] == ["good"]
    assert read.num_skipped == 2
    assert "could not find answer '红烧鱼' at answer_start 6 (found '烧鱼很')" in caplog.text
    assert "2 answers did not match their answer_start" in caplog.text


def _quadratic_improve_answer_span(doc_pieces, input_start, input_end, answer_pieces):
    """The original run_squad.py's _improve_answer_span, on ids: every start, every end."""
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            if list(doc_pieces[new_start : new_end + 1]) == list(answer_pieces):
                return new_start, new_end
    return input_start, input_end


def test_the_linear_answer_span_search_equals_the_original_quadratic_one():
    generator = random.Random(7)
    for _ in range(2000):
        # A small alphabet, so that answers occur, occur twice, or partly occur.
        doc = [generator.randrange(4) for _ in range(generator.randrange(1, 14))]
        start = generator.randrange(len(doc))
        end = generator.randrange(start, len(doc))
        answer = [generator.randrange(4) for _ in range(generator.randrange(0, 4))]
        assert improve_answer_span(doc, start, end, answer) == _quadratic_improve_answer_span(
            doc, start, end, answer
        ), (doc, start, end, answer)


def test_the_shipped_sample_reads_with_every_answer_and_its_vocab_covers_it():
    config = BertConfig.from_json_file(str(ZH / "bert_config.json"))
    assert config.vocab_size == count_vocab_lines(str(ZH_VOCAB))
    tokenizer = FastWordpieceBertTokenizer(str(ZH_VOCAB), do_lower_case=True)
    later_occurrences = 0
    for name, count in (("train.json", 40), ("dev.json", 12)):
        path = READING / name
        read = read_squad_examples(str(path), is_training=True)
        assert len(read.examples) == count and read.num_skipped == 0
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
        for paragraph in data[0]["paragraphs"]:
            context = paragraph["context"]
            ids, _ = tokenizer.tokenize_in_batches([context])
            assert tokenizer.unk_id not in ids.tolist(), context
            for qa in paragraph["qas"]:
                answer = qa["answers"][0]
                start = answer["answer_start"]
                assert context[start : start + len(answer["text"])] == answer["text"]
                later_occurrences += context.find(answer["text"]) != start
    assert later_occurrences >= 8


def test_drcd_gold_spans_come_from_answer_start():
    """DRCD dev (3,524 questions; 504 answers occur earlier in the context than answer_start
    says): the span that training labels lies in the words answer_start names, and its pieces
    spell the answer."""
    if not DRCD_DEV.exists() or not BERT_BASE_CHINESE_VOCAB.exists():
        pytest.skip(f"not present: {DRCD_DEV} or {BERT_BASE_CHINESE_VOCAB}")
    read = read_squad_examples(str(DRCD_DEV), is_training=True)
    data = json.loads(DRCD_DEV.read_text(encoding="utf-8"))["data"]
    answers = {
        qa["id"]: (paragraph["context"], qa["answers"][0])
        for article in data
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    }
    print(f"DRCD dev: {read.num_skipped} of {len(answers)} answers do not match answer_start")
    assert read.num_skipped <= len(answers) // 100
    tokenizer = FastWordpieceBertTokenizer(str(BERT_BASE_CHINESE_VOCAB), do_lower_case=True)
    features = convert_examples_to_features(read.examples, tokenizer, 512, 128, 64, True)
    split = {}
    labelled, wrong_words, wrong_text = set(), set(), set()
    for feature in features:
        if feature.start_position == 0:  # the answer is outside this window
            continue
        example = read.examples[feature.example_index]
        context, answer = answers[example.qas_id]
        if context not in split:
            split[context] = (split_context(context)[1], _word_starts(context))
        word_of_char, word_starts = split[context]
        start, text = answer["answer_start"], answer["text"]
        end = start + len(text)
        labelled.add(example.qas_id)
        first = feature.token_to_orig_map[feature.start_position]
        last = feature.token_to_orig_map[feature.end_position]
        # The words answer_start names; where the answer begins or ends with an ideograph,
        # that word is the ideograph itself, at exactly that character.
        right = (first, last) == (word_of_char[start], word_of_char[end - 1])
        if _is_chinese_char(ord(text[0])):
            right = right and word_starts[first] == start
        if _is_chinese_char(ord(text[-1])):
            right = right and word_starts[last] + len(example.doc_tokens[last]) == end
        if not right:
            wrong_words.add(example.qas_id)
        pieces = feature.tokens[feature.start_position : feature.end_position + 1]
        if "".join(pieces).replace("##", "") != "".join(text.lower().split()):
            wrong_text.add(example.qas_id)
    later = {
        qid
        for qid, (context, answer) in answers.items()
        if context.find(answer["text"]) != answer["answer_start"]
    }
    print(
        f"DRCD dev: {len(labelled)} questions labelled, {len(wrong_words)} not where "
        f"answer_start says, {len(wrong_text)} whose pieces are not the answer's text ([UNK], "
        f"or an answer inside a number such as '8' in '80%'); {len(later)} answers occur earlier"
    )
    # Every answered question has a window holding its answer, at the occurrence answer_start
    # names, also when the text occurs earlier (the original labelled the first occurrence).
    assert len(labelled) == len(read.examples)
    assert len(later) >= 500 and not wrong_words
    assert len(wrong_text) <= len(labelled) // 100
