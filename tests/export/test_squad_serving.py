"""run_squad.py --export_dir: the serving SavedModel answers raw (question, context) strings
exactly as the predict path's predictions.json / null_odds.json, windows of a context longer
than max_seq_length included, called from a process without this package."""

import json

import numpy as np
import pytest

from official_bert.config import BertConfig
from official_bert.tasks.squad import SquadOptions, run_squad
from tests.export.fresh_process import serve_each_in_one_fresh_process, serve_in_fresh_process

# A context of about 190 wordpieces: at max_seq_length 48 it takes a dozen windows. Accented
# words (lower-cased and stripped by the uncased vocabulary), runs of spaces and a newline
# between words, punctuation inside words.
_LONG_CONTEXT = (
    "The Café  Müller opened in 1895 on the Rue de l'Église, near the old   harbour.\n"
    "Its first owner, Zoë Brontë-Smith (1851-1932), sold coffee, tea and pastries to sailors "
    "who arrived from Lisbon, Genoa and Hamburg. In 1910 the building was enlarged with a second "
    "floor, and a piano was bought for the evenings. During the war the café closed for three "
    "years; it reopened in 1919 under the owner's nephew, François Dubois, who added a terrace "
    "facing the sea. The terrace became famous for its fish soup, which the guide of 1925 called "
    "the best on the coast. Today the café belongs to a cooperative of twelve families, and its "
    "walls still show photographs of the ships that once anchored in front of it."
)
_SHORT_CONTEXT = "Paris is the capital of France. It has about two million inhabitants."
_QUESTIONS = [
    ("When did the café open?", _LONG_CONTEXT),
    ("Who was the first owner?", _LONG_CONTEXT),
    ("What was the terrace famous for?", _LONG_CONTEXT),
    ("Who owns the café today?", _LONG_CONTEXT),
    ("What did the nephew add?", _LONG_CONTEXT),
    ("What is the capital of France?", _SHORT_CONTEXT),
    ("How many people live in Paris?", _SHORT_CONTEXT),
]


def _write_squad_file(path):
    paragraphs = {}
    for index, (question, context) in enumerate(_QUESTIONS):
        answer = "1895" if context is _LONG_CONTEXT else "Paris"
        paragraphs.setdefault(context, []).append(
            {
                "id": f"q{index}",
                "question": question,
                "answers": [{"text": answer, "answer_start": context.index(answer)}],
                "is_impossible": False,
            }
        )
    data = {
        "version": "v2.0",
        "data": [
            {
                "title": "t",
                "paragraphs": [{"context": c, "qas": q} for c, q in paragraphs.items()],
            }
        ],
    }
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


_SERVED_INPUTS = {"question": [q for q, _ in _QUESTIONS], "context": [c for _, c in _QUESTIONS]}


def _run_squad(minilm_dir, tmp_path, **overrides) -> dict:
    """run_squad's results for the tiny model on _QUESTIONS (train, predict, export to
    tmp_path/serving unless `overrides` say otherwise)."""
    data_file = tmp_path / "squad.json"
    _write_squad_file(data_file)
    values = dict(
        bert_config=BertConfig(
            vocab_size=30522,  # the MiniLM vocab
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
        ),
        vocab_file=str(minilm_dir / "vocab.txt"),
        output_dir=str(tmp_path / "out"),
        export_dir=str(tmp_path / "serving"),
        train_file=str(data_file),
        predict_file=str(data_file),
        do_train=True,
        do_predict=True,
        max_seq_length=48,
        doc_stride=16,
        max_query_length=12,
        train_batch_size=4,
        predict_batch_size=16,
        num_train_epochs=1.0,
        n_best_size=5,
        max_answer_length=6,
        seed=3,
    )
    values.update(overrides)
    return run_squad(SquadOptions(**values))


def _run(minilm_dir, tmp_path, **overrides):
    """_run_squad, then its export served _QUESTIONS in a fresh process:
    (predictions, served, results)."""
    results = _run_squad(minilm_dir, tmp_path, **overrides)
    served = serve_in_fresh_process(
        overrides.get("export_dir", tmp_path / "serving"), _SERVED_INPUTS
    )
    return results.get("predictions"), served, results


def _assert_spans_locate_answers(served):
    for index, (_, context) in enumerate(_QUESTIONS):
        start, end = served["start"][index], served["end"][index]
        assert 0 <= start < end <= len(context)
        # The answer is the context's characters there, whitespace runs as one space.
        assert " ".join(context[start:end].split()) == served["answer"][index]


@pytest.fixture(scope="module")
def v2_run(minilm_dir, tmp_path_factory):
    """One SQuAD v2.0 run at null_score_diff_threshold -0.6 (train, predict, export, served),
    for the two tests below: (predictions, served, its folder)."""
    tmp_path = tmp_path_factory.mktemp("v2")
    predictions, served, _ = _run(
        minilm_dir, tmp_path, version_2_with_negative=True, null_score_diff_threshold=-0.6
    )
    return predictions, served, tmp_path


def test_v2_answers_equal_the_predict_path(v2_run):
    predictions, served, _ = v2_run
    ids = [f"q{index}" for index in range(len(_QUESTIONS))]
    assert served["answer"] == [predictions.best_non_null[qid] for qid in ids]
    assert [
        a if has else "" for a, has in zip(served["answer"], served["has_answer"], strict=True)
    ] == [predictions.predictions[qid] for qid in ids]
    # The best span's logits and null - span, as nbest_predictions.json / null_odds.json.
    best = [next(entry for entry in predictions.nbest[qid] if entry["text"]) for qid in ids]
    np.testing.assert_allclose(
        served["score"], [e["start_logit"] + e["end_logit"] for e in best], atol=1e-5
    )
    np.testing.assert_allclose(
        np.array(served["null_score"]) - served["score"],
        [predictions.null_odds[qid] for qid in ids],
        atol=1e-5,
    )
    # The decision is the threshold rule on the served scores. (Whether -0.6 splits this run's
    # questions both ways depends on the host's float rounding of a tiny seeded model: a mixed
    # decision is asserted by test_tuned_threshold_is_the_one_served, whose threshold is tuned.)
    odds = np.array(served["null_score"]) - served["score"]
    assert served["has_answer"] == [bool(value <= -0.6) for value in odds]
    _assert_spans_locate_answers(served)
    # Several answers come from windows after the first (the first holds ~30 pieces: about
    # the first 120 characters).
    assert max(served["start"][:5]) > 150, served


def test_tuned_threshold_is_the_one_served(minilm_dir, v2_run):
    # --tune_null_threshold: the export waits for the predictions, then serves with the
    # threshold that predictions.json was re-written with. The model is v2_run's, restored
    # from its output_dir (the threshold options play no part in training).
    # At the flag's 5.0 every question would be answered (null - span is about -0.6 here);
    # the tuned threshold answers fewer.
    _, _, tmp_path = v2_run
    predictions, served, results = _run(
        minilm_dir,
        tmp_path,
        version_2_with_negative=True,
        tune_null_threshold=True,
        null_score_diff_threshold=5.0,
        do_train=False,
        export_dir=str(tmp_path / "serving_tuned"),
    )
    assert results["export_dir"] == str(tmp_path / "serving_tuned")
    tuned = results["eval"]["tuned"]["null_score_diff_threshold"]
    ids = [f"q{index}" for index in range(len(_QUESTIONS))]
    assert served["has_answer"] == [predictions.null_odds[qid] <= tuned for qid in ids]
    assert not all(served["has_answer"]), (tuned, predictions.null_odds)
    assert [
        a if has else "" for a, has in zip(served["answer"], served["has_answer"], strict=True)
    ] == [predictions.predictions[qid] for qid in ids]


@pytest.fixture(scope="module")
def v1_cased_run(minilm_dir, tmp_path_factory):
    """One cased SQuAD v1.1 run (train, predict, export, served), for the two tests below:
    (predictions, served, its folder)."""
    tmp_path = tmp_path_factory.mktemp("v1_cased")
    predictions, served, _ = _run(minilm_dir, tmp_path, do_lower_case=False)
    return predictions, served, tmp_path


def test_v1_cased_answers_equal_the_predict_path(v1_cased_run):
    # Cased text on the uncased vocabulary: "Église", "Zoë" and others become [UNK], whose
    # answers the original widens to whole words.
    predictions, served, _ = v1_cased_run
    ids = [f"q{index}" for index in range(len(_QUESTIONS))]
    assert served["answer"] == [predictions.predictions[qid] for qid in ids]
    assert "null_score" not in served and "has_answer" not in served
    _assert_spans_locate_answers(served)


def _export_only(minilm_dir, tmp_path, name, **overrides) -> dict:
    """run_squad with only --export_dir=tmp_path/name (output_dir's checkpoint restored): its
    results."""
    return _run_squad(
        minilm_dir,
        tmp_path,
        do_lower_case=False,
        do_train=False,
        do_predict=False,
        export_dir=str(tmp_path / name),
        **overrides,
    )


def test_a_model_trained_earlier_is_exported_without_training(minilm_dir, v1_cased_run):
    _, served, tmp_path = v1_cased_run
    # Only --export_dir: the checkpoint in output_dir is restored and served; below, the same
    # checkpoint with the encoder's weights in bfloat16 (--serving_dtype). Both are served by
    # one fresh process.
    results = _export_only(minilm_dir, tmp_path, "serving_later")
    assert results["history"] == [] and results["export_dir"] == str(tmp_path / "serving_later")
    _export_only(minilm_dir, tmp_path, "serving_bf16", serving_dtype="bfloat16")
    again, in_bfloat16 = serve_each_in_one_fresh_process(
        [tmp_path / "serving_later", tmp_path / "serving_bf16"], _SERVED_INPUTS
    )
    assert again["answer"] == served["answer"]
    np.testing.assert_allclose(again["score"], served["score"], atol=1e-5)
    # In bfloat16: scores within bfloat16's precision, a smaller SavedModel.
    error = np.abs(np.array(in_bfloat16["score"]) - served["score"]).max()
    assert 0 < error < 2e-2 * np.abs(served["score"]).max() + 1e-2, error

    def variables_size(directory):
        return sum(f.stat().st_size for f in (directory / "variables").iterdir())

    assert variables_size(tmp_path / "serving_bf16") < 0.7 * variables_size(tmp_path / "serving")
    with pytest.raises(ValueError, match="needs `fast_kernels`"):
        _run_squad(
            minilm_dir,
            tmp_path,
            do_train=False,
            do_predict=False,
            export_dir=str(tmp_path / "refused"),
            serving_dtype="bfloat16",
            fast_kernels=False,
        )


# === The module alone, over logits made from the inputs (no training), on hard text ===


class _LogitsOfInputs:
    """A stand-in span model: start and end logits are fixed functions of each position's id
    and place, so the Python path and the serving graph see the same numbers for the same
    packed rows, and the chosen spans fall all over the contexts; `favoured_ids` (int32 [n])
    get 4 more on both, so that the words around them (accents, [UNK]) are chosen."""

    def __init__(self, favoured_ids):
        self.favoured_ids = favoured_ids

    def __call__(self, inputs, training=False):
        import tensorflow as tf

        ids = inputs["input_word_ids"]
        favoured = tf.reduce_any(tf.equal(ids[:, :, None], self.favoured_ids), axis=-1)
        bonus = 4.0 * tf.cast(favoured, tf.float32)
        ids = tf.cast(ids, tf.float32)
        position = tf.cast(tf.range(tf.shape(ids)[1]), tf.float32)[None, :]
        return {
            "start_logits": 3.0 * tf.sin(0.7 * ids + 1.3 * position) + bonus,
            "end_logits": 3.0 * tf.cos(1.1 * ids + 0.5 * position) + bonus,
        }


_HARD_CONTEXTS = [
    # Decomposed accents (an uncased model strips them: the original widens to whole words).
    "Zoe\u0308 and Bronte\u0308 met at the cafe\u0301 in Montre\u0301al on Sunday morning.",
    # A soft hyphen and a no-break space inside words, runs of spaces, tabs and newlines.
    "The co\u00adoperative   was founded\tin 1901\n\nby twelve fami\u00a0lies of fishermen.",
    # Words the vocabulary cannot cover ([UNK] pieces), CJK ideographs, punctuation in words.
    "Gödel’s ⵣⵣⵣ theorem (1931) was read in 東京 and Kraków by ☃☃ readers, e.g. Tarski.",
    # Long: a dozen windows at max_seq_length 32.
    " ".join(["Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do."] * 8),
    # Chinese without spaces, [UNK] pieces (☃) inside it, and a space the context has between
    # two ideographs: a span with an [UNK] widens to its characters' words (each ideograph
    # one), not to the whole unspaced paragraph.
    "他说☃很便宜☃。东京的IBM 於 1911年 成立，☃☃读者很多。",
    "",
    "   ",
]


@pytest.mark.parametrize("do_lower_case", [True, False])
@pytest.mark.parametrize("version_2_with_negative", [False, True])
def test_the_module_equals_postprocessing_on_hard_text(
    minilm_dir, do_lower_case, version_2_with_negative
):
    import tensorflow as tf

    from official_bert.data.bert_input_packer import BertInputPacker
    from official_bert.data.squad.examples import SquadExample, split_context
    from official_bert.data.squad.features import convert_examples_to_features
    from official_bert.evaluation.squad_postprocessing import postprocess_predictions
    from official_bert.export.squad_serving import SquadServingModule

    settings = dict(doc_stride=8, max_query_length=6, n_best_size=6, max_answer_length=7)
    packer = BertInputPacker(minilm_dir / "vocab.txt", 32, do_lower_case)
    questions = ["Who?", "When was it founded?", "Where was it read?", "What?", "何?", "Q?", "Q?"]
    examples = []
    for i, (question, context) in enumerate(zip(questions, _HARD_CONTEXTS, strict=True)):
        doc_tokens, _, space_before = split_context(context)
        # As read_squad_examples: the spaces are recorded where the context has ideographs.
        chinese = any("\u4e00" <= char <= "\u9fff" for char in context)
        examples.append(
            SquadExample(
                f"q{i}", question, doc_tokens, space_before=space_before if chinese else None
            )
        )
    features = convert_examples_to_features(
        examples,
        packer.tokenizer,
        32,
        is_training=False,
        **{k: settings[k] for k in ("doc_stride", "max_query_length")},
    )
    model = _LogitsOfInputs(
        packer.tokenizer.tokenize(["zoe cafe cooperative godel [UNK] 宜"]).merge_dims(1, -1)[0]
    )
    logits = model({"input_word_ids": tf.constant([f.input_ids for f in features])})
    unique_ids = [f.unique_id for f in features]
    expected = postprocess_predictions(
        examples,
        features,
        dict(zip(unique_ids, logits["start_logits"].numpy(), strict=True)),
        dict(zip(unique_ids, logits["end_logits"].numpy(), strict=True)),
        n_best_size=settings["n_best_size"],
        max_answer_length=settings["max_answer_length"],
        do_lower_case=do_lower_case,
        version_2_with_negative=version_2_with_negative,
        null_score_diff_threshold=-5.0,
    )
    module = SquadServingModule(
        model,
        packer,
        **settings,
        version_2_with_negative=version_2_with_negative,
        null_score_diff_threshold=-5.0,
    )
    served = module.signature()(tf.constant(questions), tf.constant(_HARD_CONTEXTS))
    answers = [a.decode() for a in served["answer"].numpy()]
    ids = [example.qas_id for example in examples]
    if version_2_with_negative:
        assert answers == [expected.best_non_null[qid] for qid in ids]
        decided = [
            a if h else "" for a, h in zip(answers, served["has_answer"].numpy(), strict=True)
        ]
        assert decided == [expected.predictions[qid] for qid in ids]
        assert 0 < sum(served["has_answer"].numpy()[:5]) < 5
    else:
        # The original answers "empty" where no span qualifies; the served answer is "".
        assert answers == [
            "" if expected.predictions[qid] == "empty" else expected.predictions[qid] for qid in ids
        ]
    assert answers[5:] == ["", ""] and served["start"].numpy().tolist()[5:] == [-1, -1]
    assert len(answers[4]) < len(_HARD_CONTEXTS[4]) // 2, answers[4]
    for index, context in enumerate(_HARD_CONTEXTS[:5]):
        start, end = served["start"].numpy()[index], served["end"].numpy()[index]
        assert " ".join(context[start:end].split()) == " ".join(answers[index].split())


class _LogitsOnPadding:
    """A stand-in span model whose start and end logits grow with the position: the best
    starts and ends of a short context's row are its padding, so no candidate is valid."""

    def __call__(self, inputs, training=False):
        import tensorflow as tf

        position = tf.cast(tf.range(tf.shape(inputs["input_word_ids"])[1]), tf.float32)
        logits = tf.broadcast_to(position[None, :], tf.shape(inputs["input_word_ids"]))
        return {"start_logits": logits, "end_logits": logits}


@pytest.mark.parametrize("version_2_with_negative", [False, True])
def test_no_valid_candidate_in_a_short_context_serves_no_answer(
    minilm_dir, version_2_with_negative
):
    import tensorflow as tf

    from official_bert.data.bert_input_packer import BertInputPacker
    from official_bert.export.squad_serving import SquadServingModule

    packer = BertInputPacker(minilm_dir / "vocab.txt", 64, True)
    module = SquadServingModule(
        _LogitsOnPadding(),
        packer,
        doc_stride=32,
        max_query_length=16,
        n_best_size=5,
        max_answer_length=30,
        version_2_with_negative=version_2_with_negative,
        null_score_diff_threshold=0.0,
    )
    # One traced signature for every batch below (its input signature takes any batch size).
    serve = module.signature()
    served = serve(
        tf.constant(["who wrote the report ?", "q?"]),
        tf.constant(["the chief officer wrote the report on growth .", ""]),
    )
    assert [a.decode() for a in served["answer"].numpy()] == ["", ""]
    assert served["start"].numpy().tolist() == [-1, -1]
    # A batch in which no context has a piece (empty, blank), or no question at all: no window
    # anywhere, and still an answer of "" per row (it failed in a reshape and a gather).
    for questions, contexts in ((["q?"], [""]), (["q?", "q?"], [" \t", ""]), ([], [])):
        served = serve(tf.constant(questions, tf.string), tf.constant(contexts, tf.string))
        assert [a.decode() for a in served["answer"].numpy()] == [""] * len(questions)
        assert served["start"].numpy().tolist() == [-1] * len(questions)
        if version_2_with_negative:
            assert not served["has_answer"].numpy().any()
    # Questions and contexts in different numbers: said as such.
    with pytest.raises(tf.errors.InvalidArgumentError, match="question and context must hold"):
        serve(tf.constant(["q?", "who?"]), tf.constant(["a context ."]))
