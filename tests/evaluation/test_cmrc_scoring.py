"""CMRC 2018's metrics (cmrc2018_evaluate.py semantics), checked against numbers worked out by
hand, and the choice of Chinese files by their share of CJK ideographs."""

import pytest

from official_bert.evaluation.cmrc_scoring import (
    cjk_share,
    cmrc2018_scores,
    cmrc_exact_match,
    cmrc_f1,
    is_chinese,
    longest_common_run,
    mixed_segmentation,
    remove_punctuation,
)
from official_bert.evaluation.squad_scoring import f1 as squad_f1


def test_mixed_segmentation_cuts_ideographs_and_words():
    assert mixed_segmentation("2018年世界杯") == ["2018", "年", "世", "界", "杯"]
    assert mixed_segmentation(" Hi, 世界2018! ") == ["hi", ",", "世", "界", "2018", "!"]
    # CMRC's marks are segments of their own, or gone with remove_punctuation; ASCII "," and
    # "." are no CMRC marks and stay.
    assert mixed_segmentation("《红楼梦》，(1895).") == ["《", "红", "楼", "梦", "》", "，"] + [
        "(",
        "1895",
        ")",
        ".",
    ]
    assert mixed_segmentation("《红楼梦》，-x", remove_punctuation=True) == ["红", "楼", "梦", "x"]
    assert remove_punctuation(" 《Python》：3 ") == "python3"


def test_the_common_run_is_contiguous():
    # "abxcd" and "abcd" share the subsequence a,b,c,d (4) but the run a,b only (2).
    assert longest_common_run(list("abxcd"), list("abcd")) == 2
    assert longest_common_run(list("abc"), list("xyz")) == 0
    assert longest_common_run([], list("abc")) == 0


def test_f1_and_em_of_a_hand_computed_case():
    prediction, gold = "2018年的世界杯", "2018年世界杯"
    # Segments: prediction 2018 年 的 世 界 杯 (6), gold 2018 年 世 界 杯 (5). The longest
    # common contiguous run is 世 界 杯 (3): precision 3/6, recall 3/5,
    # F1 = 2 * 0.5 * 0.6 / (0.5 + 0.6) = 0.6 / 1.1 = 6/11.
    assert cmrc_f1(prediction, [gold]) == pytest.approx(6 / 11)
    # SQuAD's F1 sees two different whitespace words: 0.
    assert squad_f1(prediction, gold) == 0.0
    # Against 世界杯 too: 3 common of 3, precision 3/6, recall 1, F1 = 1 / 1.5 = 2/3; the best.
    assert cmrc_f1(prediction, [gold, "世界杯"]) == pytest.approx(2 / 3)
    assert cmrc_exact_match(prediction, [gold]) == 0.0
    assert cmrc_exact_match("《红楼梦》", ["红楼梦"]) == 1.0
    assert cmrc_exact_match("Python", ["python "]) == 1.0
    assert cmrc_f1("", [gold]) == 0.0 and cmrc_f1("足球", [gold]) == 0.0


def test_file_scores_of_a_hand_computed_case():
    data = [
        {
            "paragraphs": [
                {
                    "context": "2018年世界杯在俄罗斯举行。",
                    "qas": [
                        {"id": "exact", "answers": [{"text": "俄罗斯"}]},
                        {
                            "id": "partial",
                            "answers": [{"text": "2018年世界杯"}, {"text": "世界杯"}],
                        },
                        {"id": "missing", "answers": [{"text": "2018年"}]},
                    ],
                }
            ]
        }
    ]
    predictions = {"exact": "俄罗斯。", "partial": "2018年的世界杯"}
    scores = cmrc2018_scores(data, predictions)
    # exact: F1 1, EM 1 (the full stop is removed). partial: F1 2/3 (above), EM 0.
    # missing: 0 and 0, counted in skip. Over 3 questions:
    # F1 = 100 * (1 + 2/3 + 0) / 3 = 500/9 = 55.56; EM = 100 * 1/3 = 33.33;
    # average = (500/9 + 100/3) / 2 = 400/9 = 44.44.
    assert scores["f1"] == pytest.approx(500 / 9)
    assert scores["exact_match"] == pytest.approx(100 / 3)
    assert scores["average"] == pytest.approx(400 / 9)
    assert (scores["total"], scores["skip"]) == (3, 1)


def test_chinese_files_are_told_by_their_share_of_ideographs():
    def data(*contexts):
        return [{"paragraphs": [{"context": context, "qas": []} for context in contexts]}]

    mixed = data("2018年世界杯", "ab cd")
    # Non-space characters: 2,0,1,8,年,世,界,杯,a,b,c,d = 12; ideographs 4: share 1/3.
    assert cjk_share(mixed) == pytest.approx(4 / 12)
    assert is_chinese(mixed)
    english = data("Mao Zedong (毛泽东) was born in 1893.")
    # 3 ideographs among 28 non-space characters: about 0.11.
    assert cjk_share(english) == pytest.approx(3 / 28)
    assert not is_chinese(english)
    assert cjk_share(data()) == 0.0
