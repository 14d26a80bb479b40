"""Reading SQuAD v1.1 / v2.0 JSON files into examples, as the original run_squad.py.

A paragraph's context is split on whitespace into `doc_tokens` (the original's own splitting,
which also treats U+202F as a space); an answer is located by the word offsets of its first and
last characters, so answer_start names the occurrence. Errors in the file's structure name the
place, e.g. "data[3].paragraphs[5].qas[2]: 'answers' missing".

Chinese (CMRC 2018, DRCD): a CJK ideograph (the tokenizer's own class, `_is_chinese_char`) is a
document token of its own, so "2018年世界杯" gives "2018", "年", "世", "界", "杯". The original
made a whole Chinese paragraph one "word", so the answer's first occurrence in it became the
label whatever answer_start said. A context without CJK ideographs splits exactly as before.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf
from absl import logging

from official_bert.tokenization import _is_chinese_char, whitespace_tokenize
from official_bert.utf8_text import read_json_file


@dataclasses.dataclass
class SquadExample:
    """One question about one paragraph.

    doc_tokens: the context split on whitespace (and around CJK ideographs). start_position /
    end_position: indices into doc_tokens of the answer's first and last words (training only;
    -1 for an impossible question, None when not training). orig_answer_text: the answer as
    written in the file. space_before: for each doc token, whether whitespace preceded it in the
    context (None: all words were whitespace-separated, the original's case); join_doc_tokens
    uses it to rebuild text.
    """

    qas_id: str
    question_text: str
    doc_tokens: list[str]
    orig_answer_text: str | None = None
    start_position: int | None = None
    end_position: int | None = None
    is_impossible: bool = False
    space_before: list[bool] | None = None


@dataclasses.dataclass
class SquadExamples:
    """The examples of a file and how many answers were skipped (answer_start not matching its
    context: the original warns and skips those questions)."""

    examples: list[SquadExample]
    num_skipped: int = 0


def _is_whitespace(char: str) -> bool:
    return char in " \t\r\n" or ord(char) == 0x202F


def split_context(context: str) -> tuple[list[str], list[int], list[bool]]:
    """The original's whitespace split, with each CJK ideograph a word of its own.

    Returns:
      (doc_tokens, char_to_word_offset, space_before): the words; for each character of
      `context` the index of its word (of the previous word for whitespace); for each word
      whether whitespace preceded it (the first word counts as preceded). Without CJK
      ideographs the words are the original's and space_before is all True.
    """
    doc_tokens: list[str] = []
    char_to_word_offset: list[int] = []
    space_before: list[bool] = []
    previous_is_whitespace = True
    previous_is_cjk = False
    for char in context:
        if _is_whitespace(char):
            previous_is_whitespace = True
            previous_is_cjk = False
        else:
            is_cjk = _is_chinese_char(ord(char))
            if previous_is_whitespace or is_cjk or previous_is_cjk:
                space_before.append(previous_is_whitespace or not doc_tokens)
                doc_tokens.append(char)
            else:
                doc_tokens[-1] += char
            previous_is_whitespace = False
            previous_is_cjk = is_cjk
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset, space_before


def join_doc_tokens(
    doc_tokens: list[str], space_before: list[bool] | None, start: int, end: int
) -> str:
    """doc_tokens[start..end] (inclusive) as text: one space where the context had whitespace
    (as the original's " ".join of its whitespace words, so "ＩＢＭ 於 1911年 成立" keeps its
    spaces), none where it had none ("2018年世界杯"). With space_before None, the original's
    " ".join."""
    if space_before is None:
        return " ".join(doc_tokens[start : end + 1])
    pieces = [doc_tokens[start]] if start <= end else []
    for index in range(start + 1, end + 1):
        if space_before[index]:
            pieces.append(" ")
        pieces.append(doc_tokens[index])
    return "".join(pieces)


def _has_cjk(text: str) -> bool:
    return any(_is_chinese_char(ord(char)) for char in text)


def clean_answer_text(answer_text: str) -> str:
    """An answer as join_doc_tokens writes the context's words: the original's whitespace
    words joined by single spaces (with CJK ideographs, those its whitespace separates)."""
    if not _has_cjk(answer_text):
        return " ".join(whitespace_tokenize(answer_text))
    tokens, _, space_before = split_context(answer_text)
    return join_doc_tokens(tokens, space_before, 0, len(tokens) - 1)


class SquadFormatError(ValueError):
    """A SQuAD file whose JSON structure is not what the format says; names the place."""


def _field(container, key: str, where: str, kind: type | tuple[type, ...]):
    if not isinstance(container, dict):
        raise SquadFormatError(f"{where}: expected an object, found {type(container).__name__}")
    if key not in container:
        raise SquadFormatError(f"{where}: {key!r} missing")
    value = container[key]
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise SquadFormatError(f"{where}.{key}: expected {expected}, found {type(value).__name__}")
    return value


def load_squad_json(path: str) -> list[dict]:
    """The `data` list of a SQuAD file (UTF-8, a byte-order mark allowed); errors name the file
    and, for bad JSON, line and column, for bytes that are not UTF-8, line and byte offset."""
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"SQuAD file not found: {path}")
    dataset = read_json_file(path, SquadFormatError)
    if not isinstance(dataset, dict):
        raise SquadFormatError(f"{path}: expected a JSON object with 'data', found a list/value")
    try:
        return _field(dataset, "data", "top level", list)
    except SquadFormatError as error:
        raise SquadFormatError(f"{path}: {error}") from None


def read_squad_examples(
    path: str, is_training: bool, version_2_with_negative: bool = False
) -> SquadExamples:
    """The examples of a SQuAD file, in file order, as the original read_squad_examples.

    Args:
      path: a SQuAD v1.1 or v2.0 JSON file.
      is_training: read the answers (their positions become training labels). Prediction
        ignores them (scoring reads the file itself).
      version_2_with_negative: questions may be unanswerable (`is_impossible`; where a file
        lacks that field, an empty `answers` list).

    When training, a question with several answers uses the first (the original refused such
    files; SQuAD dev files give 3-5 answers per question). An answer whose text is not found at
    its answer_start is skipped with a warning and counted, as the original.

    Raises:
      FileNotFoundError, SquadFormatError: the file or a field is missing or of the wrong type,
        naming where (e.g. "data[3].paragraphs[5].qas[2]: 'answers' missing").
    """
    data = load_squad_json(path)
    examples: list[SquadExample] = []
    num_skipped = 0
    for article_index, article in enumerate(data):
        article_where = f"{path}: data[{article_index}]"
        paragraphs = _field(article, "paragraphs", article_where, list)
        for paragraph_index, paragraph in enumerate(paragraphs):
            paragraph_where = f"{article_where}.paragraphs[{paragraph_index}]"
            context = _field(paragraph, "context", paragraph_where, str)
            doc_tokens, char_to_word_offset, space_before = split_context(context)
            # None keeps an English paragraph's examples as they were (" ".join).
            space_before = space_before if _has_cjk(context) else None
            for qa_index, qa in enumerate(_field(paragraph, "qas", paragraph_where, list)):
                where = f"{paragraph_where}.qas[{qa_index}]"
                qas_id = str(_field(qa, "id", where, (str, int)))
                question_text = _field(qa, "question", where, str)
                if not is_training:
                    examples.append(
                        SquadExample(qas_id, question_text, doc_tokens, space_before=space_before)
                    )
                    continue
                is_impossible = False
                if version_2_with_negative and "is_impossible" in qa:
                    is_impossible = bool(_field(qa, "is_impossible", where, (bool, int)))
                elif version_2_with_negative:
                    # Exports without the field (Hugging Face datasets' squad_v2 written back
                    # as JSON) mark an unanswerable question by its empty answer list.
                    is_impossible = not _field(qa, "answers", where, list)
                if is_impossible:
                    examples.append(
                        SquadExample(
                            qas_id, question_text, doc_tokens, "", -1, -1, True, space_before
                        )
                    )
                    continue
                answers = _field(qa, "answers", where, list)
                if not answers:
                    raise SquadFormatError(
                        f"{where}: no answers for a question that is not is_impossible (for "
                        "SQuAD 2.0 data, whose unanswerable questions have none, pass "
                        "--version_2_with_negative=True)"
                    )
                answer_where = f"{where}.answers[0]"
                answer_text = _field(answers[0], "text", answer_where, str)
                answer_start = _field(answers[0], "answer_start", answer_where, int)
                answer_end = answer_start + len(answer_text) - 1
                actual_text = None
                if answer_text and 0 <= answer_start and answer_end < len(context):
                    start_position = char_to_word_offset[answer_start]
                    end_position = char_to_word_offset[answer_end]
                    actual_text = join_doc_tokens(
                        doc_tokens, space_before, start_position, end_position
                    )
                cleaned_answer_text = clean_answer_text(answer_text)
                if actual_text is None or actual_text.find(cleaned_answer_text) == -1:
                    logging.warning(
                        "%s: could not find answer %r at answer_start %d (found %r); skipped",
                        where,
                        cleaned_answer_text,
                        answer_start,
                        actual_text,
                    )
                    num_skipped += 1
                    continue
                examples.append(
                    SquadExample(
                        qas_id,
                        question_text,
                        doc_tokens,
                        answer_text,
                        start_position,
                        end_position,
                        False,
                        space_before,
                    )
                )
    if num_skipped:
        logging.warning(
            "%s: %d answers did not match their answer_start and were skipped", path, num_skipped
        )
    return SquadExamples(examples, num_skipped)
