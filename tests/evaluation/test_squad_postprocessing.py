"""SQuAD post-processing against the original run_squad.py write_predictions (golden file)."""

import json

import numpy as np
import pytest

from official_bert.data.squad.examples import SquadExample, read_squad_examples
from official_bert.data.squad.features import SquadFeature, convert_examples_to_features
from official_bert.evaluation.squad_postprocessing import (
    NO_SPAN_NULL_ODDS,
    get_final_text,
    postprocess_predictions,
    rethreshold,
    write_prediction_files,
)
from official_bert.tokenization import FullTokenizer
from tests.data.squad.test_features import GOLDEN


def _logits_for(unique_id, length):
    # The generator the golden file's recipe used (make_squad_original_golden.py).
    rng = np.random.default_rng(unique_id)
    return rng.normal(size=length), rng.normal(size=length)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_predictions_equal_the_original(tmp_path, minilm_dir, version):
    golden = json.loads(GOLDEN.read_text())
    settings = golden["settings"]
    path = tmp_path / "input.json"
    path.write_text(json.dumps(golden[version]["input"]))
    examples = read_squad_examples(str(path), False, version == "v2").examples
    tokenizer = FullTokenizer(str(minilm_dir / "vocab.txt"), do_lower_case=True)
    features = convert_examples_to_features(
        examples,
        tokenizer,
        settings["max_seq_length"],
        settings["doc_stride"],
        settings["max_query_length"],
        False,
    )
    logits = {f.unique_id: _logits_for(f.unique_id, settings["max_seq_length"]) for f in features}
    predictions = postprocess_predictions(
        examples,
        features,
        {uid: value[0] for uid, value in logits.items()},
        {uid: value[1] for uid, value in logits.items()},
        n_best_size=settings["n_best_size"],
        max_answer_length=settings["max_answer_length"],
        version_2_with_negative=version == "v2",
    )
    expected = golden[version]
    assert predictions.predictions == expected["predictions"]
    assert set(predictions.nbest) == set(expected["nbest"])
    for qid, entries in expected["nbest"].items():
        ours = predictions.nbest[qid]
        assert [e["text"] for e in ours] == [e["text"] for e in entries]
        for key in ("probability", "start_logit", "end_logit"):
            np.testing.assert_allclose([e[key] for e in ours], [e[key] for e in entries], 1e-6)
    if version == "v2":
        assert set(predictions.null_odds) == set(expected["null_odds"])
        for qid, odds in expected["null_odds"].items():
            assert predictions.null_odds[qid] == pytest.approx(odds, abs=1e-6)
        # A threshold below every odds makes every answer empty; above, none.
        assert set(rethreshold(predictions, -100.0).values()) == {""}
        assert "" not in rethreshold(predictions, 100.0).values()
    paths = write_prediction_files(str(tmp_path), predictions)
    assert sorted(paths) == sorted(
        ["predictions", "nbest_predictions"] + (["null_odds"] if version == "v2" else [])
    )
    written = json.loads((tmp_path / "predictions.json").read_text())
    assert written == expected["predictions"]
    nbest = json.loads((tmp_path / "nbest_predictions.json").read_text())
    assert set(nbest[next(iter(nbest))][0]) == {"text", "probability", "start_logit", "end_logit"}


def _one_window(start_logits, end_logits):
    example = SquadExample("q", "who?", ["Peter", "(1895-1943)."])
    tokens = ["[CLS]", "who", "?", "[SEP]", "peter", "(", "1895", "-", "1943", ")", ".", "[SEP]"]
    feature = SquadFeature(
        unique_id=1000000000,
        example_index=0,
        doc_span_index=0,
        tokens=tokens,
        token_to_orig_map={4: 0, 5: 1, 6: 1, 7: 1, 8: 1, 9: 1, 10: 1},
        token_is_max_context={i: True for i in range(4, 11)},
        input_ids=[0] * 12,
        input_mask=[1] * 12,
        segment_ids=[0] * 12,
    )
    return (
        [example],
        [feature],
        {1000000000: np.array(start_logits)},
        {1000000000: np.array(end_logits)},
    )


def test_a_wordpiece_answer_is_projected_onto_the_original_word():
    start = [0.0] * 12
    end = [0.0] * 12
    start[6], end[6] = 5.0, 5.0  # "1895" inside the word "(1895-1943)."
    predictions = postprocess_predictions(*_one_window(start, end), n_best_size=3)
    assert predictions.predictions == {"q": "1895"}
    assert get_final_text("1895 - 1943", "(1895-1943).", True) == "1895-1943"
    # The original's fallback: text it cannot align is answered with the whole original span.
    assert get_final_text("steve smith", "Steve Smith's", True) == "Steve Smith"
    assert get_final_text("zzz", "Steve", True) == "Steve"


def test_v2_with_only_null_candidates_does_not_crash():
    # Every start/end pair is filtered out (end before start, or [SEP]), so the n-best holds only
    # the null answer: the original crashed here (google-research/bert#476).
    start = [0.0] * 12
    end = [0.0] * 12
    start[0], end[0] = 9.0, 9.0
    start[10], end[4] = 8.0, 8.0
    for i in range(12):
        if i not in (0, 10):
            start[i] = -50.0
        if i not in (0, 4):
            end[i] = -50.0
    predictions = postprocess_predictions(
        *_one_window(start, end), n_best_size=2, version_2_with_negative=True
    )
    assert predictions.predictions == {"q": ""}
    assert [e["text"] for e in predictions.nbest["q"]] == [""]
    assert predictions.null_odds == {"q": NO_SPAN_NULL_ODDS}
    assert rethreshold(predictions, 1e12) == {"q": ""}
    # v1.1 in the same situation: the original's nonce answer.
    v1 = postprocess_predictions(*_one_window(start, end), n_best_size=2)
    assert v1.predictions == {"q": "empty"}


def test_chinese_answers_have_no_space_between_ideographs(tmp_path):
    context = "他用 Python 3 写了《红楼梦》的索引，2018年完成。"
    qas = [{"id": "q", "question": "写了什么？"}]
    path = tmp_path / "cmrc.json"
    path.write_text(
        json.dumps({"data": [{"paragraphs": [{"context": context, "qas": qas}]}]}),
        encoding="utf-8",
    )
    characters = sorted({c.lower() for c in context + qas[0]["question"] if not c.isspace()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *characters]
    vocab += [f"##{c}" for c in characters if c.isascii() and c.isalnum()]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = FullTokenizer(str(tmp_path / "vocab.txt"), do_lower_case=True)
    examples = read_squad_examples(str(path), False).examples
    (feature,) = convert_examples_to_features(examples, tokenizer, 64, 32, 16, False)
    tokens = feature.tokens

    def answer(first_piece: str, last_piece: str, after: int = 0) -> str:
        start = tokens.index(first_piece, after)
        end = tokens.index(last_piece, start)
        logits = np.full(64, -10.0)
        start_logits, end_logits = logits.copy(), logits.copy()
        start_logits[start], end_logits[end] = 10.0, 10.0
        predictions = postprocess_predictions(
            examples, [feature], {feature.unique_id: start_logits}, {feature.unique_id: end_logits}
        )
        return predictions.predictions["q"]

    # The wordpieces "红 楼 梦" become the context's characters, without spaces.
    assert answer("红", "梦") == "红楼梦"
    # Spaces between Latin words (and before an ideograph after one) are the context's.
    assert answer("p", "了") == "Python 3 写了"
    # "，2018" is one document word; the alignment of get_final_text cuts the answer out of it.
    assert answer("2", "年") == "2018年"
    assert answer("《", "》") == "《红楼梦》"
