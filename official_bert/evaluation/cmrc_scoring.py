"""CMRC 2018's official metrics (cmrc2018_evaluate.py, v5) for Chinese reading comprehension.

SQuAD's F1 counts whitespace words, and a Chinese answer has none: "世界杯" against "世界" is one
word against another, F1 0. CMRC 2018 scores characters instead:

- segmentation: the text is lower-cased and stripped; every CJK ideograph and every CMRC
  punctuation mark is a segment of its own; the runs between them (Latin words, numbers) are cut
  into words ("2018年世界杯" -> "2018", "年", "世", "界", "杯").
- F1: with punctuation removed, the length of the longest common *contiguous* run of segments
  (the official find_lcs is a longest common substring, despite its name) gives precision and
  recall; a question scores its best gold answer.
- EM: lower-cased, stripped, punctuation removed, the strings are equal (spaces count).
- both in percent over all questions of the file; a question without a prediction scores 0 and
  is counted in "skip". AVERAGE is (EM + F1) / 2.

Three deliberate differences, all on text the CMRC and DRCD sets hardly contain:
- the ideographs are the tokenizer's class (`_is_chinese_char`: the CJK blocks and extensions),
  where the script tests U+4E00..U+9FA5 only, so a rarer ideograph is still a segment of its own;
- the script cuts the non-CJK runs with nltk's Treebank tokenizer; here each whitespace word
  loses its leading and trailing punctuation as separate segments ("(1895)." -> "(", "1895",
  ")", "."), the same on numbers, dates and plain words, but English contractions stay whole
  ("don't", where nltk gives "do", "n't");
- a question without gold answers scores 0 (the script crashes on it).
The script lists "……" as a punctuation mark, but compares single characters, so it never
matches; "…" is therefore kept here too.
"""

from __future__ import annotations

from official_bert.tokenization import _is_chinese_char

# cmrc2018_evaluate.py's sp_char: ASCII and full-width marks removed before scoring.
CMRC_PUNCTUATION = frozenset("-:_*^/\\~`+=，。：？！“”；’《》·、「」（）－～『』")

# A file is Chinese when CJK ideographs are at least this share of its contexts' non-whitespace
# characters (DRCD dev: 0.86; SQuAD v1.1 dev: 0.0001).
CHINESE_SHARE = 0.3


def cjk_share(data: list[dict]) -> float:
    """The share of CJK ideographs among the non-whitespace characters of every context of a
    SQuAD-format `data` list (0.0 for no text)."""
    cjk = total = 0
    for article in data:
        for paragraph in article.get("paragraphs", []):
            for char in paragraph.get("context", ""):
                if not char.isspace():
                    total += 1
                    cjk += _is_chinese_char(ord(char))
    return cjk / total if total else 0.0


def is_chinese(data: list[dict]) -> bool:
    """Whether a SQuAD-format file is scored with CMRC 2018's metrics (see CHINESE_SHARE)."""
    return cjk_share(data) >= CHINESE_SHARE


def _split_word(word: str) -> list[str]:
    """A whitespace word with its leading and trailing punctuation split off, one mark each."""
    start, end = 0, len(word)
    while start < end and not word[start].isalnum():
        start += 1
    while end > start and not word[end - 1].isalnum():
        end -= 1
    return list(word[:start]) + ([word[start:end]] if start < end else []) + list(word[end:])


def mixed_segmentation(text: str, remove_punctuation: bool = False) -> list[str]:
    """CMRC's segments of `text` (lower-cased, stripped): each CJK ideograph and each CMRC
    punctuation mark alone (marks dropped with remove_punctuation), the other runs cut into
    words. "Hi, 世界2018!" -> ["hi", ",", "世", "界", "2018", "!"]."""
    segments: list[str] = []
    run: list[str] = []

    def flush_run():
        for word in "".join(run).split():
            segments.extend(_split_word(word))
        run.clear()

    for char in text.lower().strip():
        is_mark = char in CMRC_PUNCTUATION
        if remove_punctuation and is_mark:
            continue
        if is_mark or _is_chinese_char(ord(char)):
            flush_run()
            segments.append(char)
        else:
            run.append(char)
    flush_run()
    return segments


def remove_punctuation(text: str) -> str:
    """`text` lower-cased and stripped, without CMRC's punctuation marks (EM's normalisation)."""
    return "".join(char for char in text.lower().strip() if char not in CMRC_PUNCTUATION)


def longest_common_run(first: list[str], second: list[str]) -> int:
    """The length of the longest contiguous run of segments that both lists contain (the
    official find_lcs), by dynamic programming: O(len(first) * len(second)), short answers."""
    best = 0
    previous = [0] * (len(second) + 1)
    for item in first:
        current = [0] * (len(second) + 1)
        for index, other in enumerate(second):
            if item == other:
                current[index + 1] = previous[index] + 1
                best = max(best, current[index + 1])
        previous = current
    return best


def cmrc_f1(prediction: str, answers: list[str]) -> float:
    """The best character-level F1 (0..1) of `prediction` over the gold `answers`."""
    prediction_segments = mixed_segmentation(prediction, remove_punctuation=True)
    best = 0.0
    for answer in answers:
        answer_segments = mixed_segmentation(answer, remove_punctuation=True)
        common = longest_common_run(answer_segments, prediction_segments)
        if common == 0:
            continue
        precision = common / len(prediction_segments)
        recall = common / len(answer_segments)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


def cmrc_exact_match(prediction: str, answers: list[str]) -> float:
    """1.0 when `prediction` equals a gold answer after remove_punctuation, else 0.0."""
    normalized = remove_punctuation(prediction)
    return float(any(remove_punctuation(answer) == normalized for answer in answers))


def cmrc2018_scores(data: list[dict], predictions: dict[str, str]) -> dict:
    """cmrc2018_evaluate.py's results for a SQuAD-format `data` list.

    Args:
      data: the `data` list of the gold file (each question's "answers" give its gold texts).
      predictions: question id -> predicted text.

    Returns:
      {"f1", "exact_match", "average"} in percent, "total" (questions) and "skip" (questions
      without a prediction, scored 0).
    """
    f1_sum = exact_sum = 0.0
    total = skip = 0
    for article in data:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                qid = str(qa["id"]).strip()
                if qid not in predictions:
                    skip += 1
                    continue
                answers = [answer["text"] for answer in qa.get("answers", [])]
                prediction = str(predictions[qid])
                f1_sum += cmrc_f1(prediction, answers)
                exact_sum += cmrc_exact_match(prediction, answers)
    f1 = 100.0 * f1_sum / total if total else 0.0
    exact_match = 100.0 * exact_sum / total if total else 0.0
    return {
        "f1": f1,
        "exact_match": exact_match,
        "average": (f1 + exact_match) / 2,
        "total": total,
        "skip": skip,
    }
