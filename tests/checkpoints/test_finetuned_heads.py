"""Fine-tuned heads (sentence classifier, SQuAD span, token tagger, multiple choice) are read
from Hugging Face files, kept by convert_checkpoint in every layout, and written as the Hugging
Face class that holds them. Reference: tests/fixtures/hf_finetuned_heads, written and computed
by PyTorch transformers (tests/fixtures/make_hf_finetuned_heads.py)."""

import json
import logging

import keras
import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

from official_bert.checkpoints import load_bert_weights, save_bert_weights
from official_bert.checkpoints.conversion import (
    convert_checkpoint,
    load_model_with_available_heads,
)
from official_bert.checkpoints.loading import read_bert_config
from official_bert.checkpoints.safetensors_bert import read_hf_architectures
from official_bert.checkpoints.variable_table import CheckpointMismatchError
from official_bert.models import (
    BertClassifier,
    BertEncoder,
    BertMultipleChoice,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenTagger,
)
from tests.conftest import FIXTURES

HEADS = FIXTURES / "hf_finetuned_heads"
# folder: (our model class, its number of labels or tags)
EXPECTED = {
    "sequence_classification": (BertClassifier, 3),
    "question_answering": (BertSpanLabeler, None),
    "token_classification": (BertTokenTagger, 5),
    "multiple_choice": (BertMultipleChoice, None),
}


def _fixture_copy(folder: str, target, **config_changes):
    """A copy of a fixture folder's model.safetensors at `target` with its config.json changed
    (a field set to None is removed); returns `target`."""
    source = HEADS / folder
    target.mkdir()
    (target / "model.safetensors").write_bytes((source / "model.safetensors").read_bytes())
    values = json.loads((source / "config.json").read_text(encoding="utf-8"))
    for field, value in config_changes.items():
        if value is None:
            values.pop(field)
        else:
            values[field] = value
    (target / "config.json").write_text(json.dumps(values), encoding="utf-8")
    return target


# Tags as a Hugging Face NER model numbers them (not sorted).
NER_TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def _named_ner_copy(target):
    """The token-classification fixture with NER_TAGS as its id2label and label2id."""
    return _fixture_copy(
        "token_classification",
        target,
        id2label=dict(enumerate(NER_TAGS)),
        label2id={name: index for index, name in enumerate(NER_TAGS)},
    )


def _model_from(path, checkpoint_format, config_file):
    return load_model_with_available_heads(
        read_bert_config(str(config_file)),
        str(path),
        checkpoint_format,
        read_hf_architectures(str(config_file)),
    )


def _assert_matches_pytorch(model, folder):
    reference = np.load(HEADS / folder / "outputs.npz")
    outputs = model(
        {
            "input_word_ids": reference["input_ids"],
            "input_mask": reference["input_mask"],
            "input_type_ids": reference["token_type_ids"],
        }
    )
    if isinstance(outputs, dict):
        for name in ("start_logits", "end_logits"):
            np.testing.assert_allclose(outputs[name], reference[name], atol=2e-5, err_msg=name)
    else:
        np.testing.assert_allclose(outputs, reference["logits"], atol=2e-5)


def _assert_kind(model, folder):
    model_class, size = EXPECTED[folder]
    assert type(model) is model_class
    if model_class is BertClassifier:
        assert model.num_classes == size
    if model_class is BertTokenTagger:
        assert model.num_tags == size


@pytest.mark.parametrize("folder", sorted(EXPECTED))
def test_hugging_face_fine_tuned_models_are_read_with_their_heads(folder):
    """Each HF class is recognized (the number of labels from the file), its outputs are
    PyTorch's; the pooler-less question-answering and token-classification files load."""
    directory = HEADS / folder
    model = _model_from(directory, "safetensors", directory / "config.json")
    _assert_kind(model, folder)
    _assert_matches_pytorch(model, folder)


@pytest.mark.parametrize("folder", sorted(EXPECTED))
def test_conversion_keeps_the_head_in_every_layout(folder, tmp_path):
    """HF safetensors -> tf1 -> object -> safetensors: each output is read back as the same
    fine-tuned model with PyTorch's outputs, and the final safetensors file holds exactly the
    tensors and the class (with its labels) that transformers itself wrote."""
    source = HEADS / folder
    current, current_config = source, source / "config.json"
    for index, output_format in enumerate(("tf1", "object", "safetensors")):
        output_dir = tmp_path / f"{index}_{output_format}"
        written = convert_checkpoint(str(current), str(output_dir), output_format)
        config_file = output_dir / (
            "config.json" if output_format == "safetensors" else "bert_config.json"
        )
        model = _model_from(written, output_format, config_file)
        _assert_kind(model, folder)
        _assert_matches_pytorch(model, folder)
        current, current_config = written, config_file

    ours, theirs = load_file(current), load_file(source / "model.safetensors")
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        assert ours[name].shape == value.shape, name
    ours_config = json.loads(current_config.read_text(encoding="utf-8"))
    theirs_config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    for field in ("architectures", "id2label", "label2id"):
        assert ours_config.get(field) == theirs_config.get(field), field


def test_a_fine_tuning_runs_object_checkpoint_converts_with_its_head(tmp_path):
    """A training run's checkpoint (the model beside its optimizer, as the Runner writes it) of
    a 3-label classifier converts to a BertForSequenceClassification file with the run's
    label names."""
    folder = "sequence_classification"
    model = _model_from(HEADS / folder, "safetensors", HEADS / folder / "config.json")
    run_dir = tmp_path / "run"
    # As the Runner saves it: TensorFlow then keys the variables under the optimizer's lists.
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    prefix = tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(run_dir / "ckpt"))
    keys = [key for key, _ in tf.train.list_variables(prefix)]
    assert not [key for key in keys if key.startswith("model/classifier")], keys
    read_bert_config(str(HEADS / folder / "config.json")).to_json_file(
        str(run_dir / "bert_config.json")
    )
    # The label names the run's serving export keeps.
    labels_file = run_dir / "serving_model" / "assets.extra" / "labels.txt"
    labels_file.parent.mkdir(parents=True)
    labels_file.write_text("negative\nneutral\npositive\n", encoding="utf-8")
    written = convert_checkpoint(prefix, str(tmp_path / "hf"), "safetensors")
    tensors = load_file(written)
    assert tensors["classifier.weight"].shape == (3, 32)
    assert "bert.pooler.dense.weight" in tensors
    config = json.loads((tmp_path / "hf" / "config.json").read_text(encoding="utf-8"))
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert config["id2label"] == {"0": "negative", "1": "neutral", "2": "positive"}
    assert config["label2id"] == {"negative": 0, "neutral": 1, "positive": 2}

    # Labels of another count are not taken: the generic names.
    labels_file.write_text("yes\nno\n", encoding="utf-8")
    convert_checkpoint(str(run_dir), str(tmp_path / "hf2"), "safetensors")
    config = json.loads((tmp_path / "hf2" / "config.json").read_text(encoding="utf-8"))
    assert config["id2label"] == {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}
    converted = _model_from(written, "safetensors", tmp_path / "hf" / "config.json")
    _assert_matches_pytorch(converted, folder)


def test_a_head_of_another_size_is_refused_with_the_files_size():
    """Fine-tuning a 2-label classifier from a 3-label file is refused (the error names both
    shapes), and the error carries the file's size for a converter."""
    folder = HEADS / "sequence_classification"
    config = read_bert_config(str(folder / "config.json"))
    model = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2)
    model.build()
    with pytest.raises(
        CheckpointMismatchError, match=r"classifier\.weight: file \[3, 32\]"
    ) as error:
        load_bert_weights(model, str(folder))
    assert error.value.head_sizes == {"classifier": 3}


def test_a_tagger_reads_a_token_classifiers_head(tmp_path):
    """run_classifier-style fine-tuning of a 5-tag tagger from a BertForTokenClassification file
    starts from its head; the same file without config.json's architecture still converts as a
    tagger: its head is named as a sentence classifier's, but it has no pooler, which
    BertForSequenceClassification always has."""
    folder = HEADS / "token_classification"
    config = read_bert_config(str(folder / "config.json"))
    tagger = BertTokenTagger(BertEncoder.from_bert_config(config), num_tags=5)
    tagger.build()
    load_bert_weights(tagger, str(folder), require_heads=True)
    _assert_matches_pytorch(tagger, "token_classification")

    bare = _fixture_copy("token_classification", tmp_path / "no_architecture", architectures=None)
    model = _model_from(bare, "safetensors", bare / "config.json")
    _assert_kind(model, "token_classification")
    _assert_matches_pytorch(model, "token_classification")


def test_a_missing_pooler_keeps_its_initialization_and_says_so(caplog):
    """A pooler-less file (BertForQuestionAnswering) fills an encoder but for its pooler, with a
    warning, since the encoder's pooled_output then is not pre-trained; a span labeler or an
    MLM-only pretrainer, which do not use it, load without one (the pretrainer is warned of its
    masked-LM head instead, which the file lacks too)."""
    folder = HEADS / "question_answering"
    config = read_bert_config(str(folder / "config.json"))
    tensors = load_file(folder / "model.safetensors")
    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    with caplog.at_level(logging.INFO):
        load_bert_weights(encoder, str(folder))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("holds no pooler" in message for message in warnings), warnings
    np.testing.assert_array_equal(
        encoder.embeddings.word_embeddings.embeddings.numpy(),
        tensors["bert.embeddings.word_embeddings.weight"],
    )

    caplog.clear()
    pretrainer = BertPretrainer(BertEncoder.from_bert_config(config), use_next_sentence_label=False)
    pretrainer.build()
    with caplog.at_level(logging.INFO):
        load_bert_weights(pretrainer, str(folder))
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "holds no masked-LM head" in warnings[0], warnings
    assert "BertPretrainer's masked-LM head starts from its random initialization" in warnings[0]


def test_span_and_tagger_safetensors_omit_the_pooler_and_read_back(tmp_path):
    """Written as HF writes them (no bert.pooler.*), a span labeler's and a tagger's files load
    back into the same models with equal outputs."""
    for folder in ("question_answering", "token_classification"):
        model = _model_from(HEADS / folder, "safetensors", HEADS / folder / "config.json")
        path = save_bert_weights(model, str(tmp_path / f"{folder}.safetensors"), "safetensors")
        assert not [name for name in load_file(path) if "pooler" in name]
        config = read_bert_config(str(HEADS / folder / "config.json"))
        again = (
            BertSpanLabeler(BertEncoder.from_bert_config(config))
            if folder == "question_answering"
            else BertTokenTagger(BertEncoder.from_bert_config(config), num_tags=5)
        )
        again.build()
        load_bert_weights(again, path, require_heads=True)
        _assert_matches_pytorch(again, folder)


def test_hugging_face_label_names_are_kept(tmp_path):
    """A Hugging Face NER model's own id2label (B-PER, ...) is written back as it was."""
    named = _named_ner_copy(tmp_path / "named")
    convert_checkpoint(str(named), str(tmp_path / "out"), "safetensors")
    config = json.loads((tmp_path / "out" / "config.json").read_text(encoding="utf-8"))
    assert config["architectures"] == ["BertForTokenClassification"]
    assert config["id2label"] == {str(index): name for index, name in enumerate(NER_TAGS)}


def test_training_starts_a_new_head_where_the_checkpoints_has_other_labels(caplog):
    """Fine-tuning a 2-label task from a 3-label classifier (or a 4-tag tagger from a 5-tag NER
    model, or a multiple-choice model from the 3-label classifier, whose head transformers names
    as a multiple-choice head) starts from the encoder with a new head and says so; evaluating
    or predicting with such a checkpoint, which would run its head, is refused."""
    from types import SimpleNamespace

    from official_bert.tasks.finetuning import initialize_weights

    for folder, make_model, head_name in (
        ("sequence_classification", lambda e: BertClassifier(e, num_classes=2), "classifier"),
        ("token_classification", lambda e: BertTokenTagger(e, num_tags=4), "tagger"),
        ("sequence_classification", BertMultipleChoice, "multiple_choice"),
    ):
        source = HEADS / folder
        config = read_bert_config(str(source / "config.json"))
        model = make_model(BertEncoder.from_bert_config(config))
        model.build()
        head = getattr(model, head_name)
        initial_head = head.dense.kernel.numpy().copy()
        options = SimpleNamespace(init_checkpoint=str(source), hub_module_handle=None)
        with pytest.raises(CheckpointMismatchError, match="model expects"):
            initialize_weights(model, SimpleNamespace(**vars(options), do_train=False))
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            initialize_weights(model, SimpleNamespace(**vars(options), do_train=True))
        assert any(
            "starts from its encoder and a new head" in r.getMessage() for r in caplog.records
        )
        if head_name == "multiple_choice":  # 3 outputs where a multiple-choice head has 1
            assert "most likely a sentence classifier's" in caplog.text
        else:
            assert f"a {head_name} head of" in caplog.text
        np.testing.assert_array_equal(
            model.encoder.embeddings.word_embeddings.embeddings.numpy(),
            load_file(source / "model.safetensors")["bert.embeddings.word_embeddings.weight"],
        )
        np.testing.assert_array_equal(head.dense.kernel.numpy(), initial_head)


def test_a_converted_token_classifier_converts_again_as_one(tmp_path):
    """A safetensors output holds bert_config.json (which find_bert_config prefers) beside the
    HF config.json: converting it again reads the class and label names from config.json, so
    a token classifier stays one, with its labels, rather than becoming a sentence classifier
    with a random pooler."""
    named = _named_ner_copy(tmp_path / "named")
    once = tmp_path / "once"
    convert_checkpoint(str(named), str(once), "safetensors")
    assert (once / "bert_config.json").exists()
    for output_format in ("safetensors", "tf1"):
        output_dir = tmp_path / f"again_{output_format}"
        written = convert_checkpoint(str(once), str(output_dir), output_format)
        config_file = output_dir / (
            "config.json" if output_format == "safetensors" else "bert_config.json"
        )
        model = _model_from(written, output_format, config_file)
        _assert_kind(model, "token_classification")
        _assert_matches_pytorch(model, "token_classification")
    config = json.loads((tmp_path / "again_safetensors" / "config.json").read_text("utf-8"))
    assert config["architectures"] == ["BertForTokenClassification"]
    assert config["id2label"] == {str(index): name for index, name in enumerate(NER_TAGS)}


def test_repeated_hugging_face_label_names_give_the_generic_ones(tmp_path):
    """An id2label that names a label twice (label2id cannot hold it) is not taken, as a run's
    labels.txt of repeated names is not: the conversion writes transformers' generic names
    rather than failing after the weights are written."""
    repeated = _fixture_copy(
        "sequence_classification",
        tmp_path / "repeated",
        id2label={"0": "entailment", "1": "neutral", "2": "neutral"},
        label2id={"entailment": 0, "neutral": 2},
    )
    convert_checkpoint(str(repeated), str(tmp_path / "out"), "safetensors")
    config = json.loads((tmp_path / "out" / "config.json").read_text(encoding="utf-8"))
    assert config["id2label"] == {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}


def test_a_head_on_another_model_size_is_not_a_label_count_case(tmp_path, caplog):
    """An object checkpoint of a wider model (hidden 64) with a 3-label head, read into a
    2-label classifier of hidden 32: the error is the shapes', not 'another number of labels'
    (no head_sizes), and training does not announce a new head before failing on the encoder."""
    from types import SimpleNamespace

    from official_bert.config import BertConfig
    from official_bert.tasks.finetuning import initialize_weights

    config = read_bert_config(str(HEADS / "sequence_classification" / "config.json"))
    wide = BertConfig.from_dict({**config.to_dict(), "hidden_size": 64, "intermediate_size": 96})
    other = BertClassifier(BertEncoder.from_bert_config(wide), num_classes=3)
    other.build()
    prefix = save_bert_weights(other, str(tmp_path / "ckpt"), "object")
    model = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2)
    model.build()
    with pytest.raises(CheckpointMismatchError, match="incompatible") as error:
        load_bert_weights(model, prefix)
    assert error.value.head_sizes == {}
    with caplog.at_level(logging.WARNING), pytest.raises(CheckpointMismatchError):
        initialize_weights(
            model, SimpleNamespace(init_checkpoint=prefix, hub_module_handle=None, do_train=True)
        )
    assert not [r for r in caplog.records if "new head" in r.getMessage()]


@pytest.mark.parametrize("per_token", [False, True], ids=["sentences", "tokens"])
def test_a_feature_based_runs_head_is_not_taken_for_a_fine_tuned_one(per_token, tmp_path, caplog):
    """A feature-based run (frozen encoder; its head on raw layer features, not the pooled
    output) keeps the object paths of a BertClassifier: the optimizer beside it, which trains no
    encoder variable, tells them apart. Converted, it is its encoder alone; a classifier started
    from it keeps a new head, with a warning."""
    from official_bert.models.feature_based_classifier import FeatureBasedClassifier

    folder = HEADS / "sequence_classification"
    config = read_bert_config(str(folder / "config.json"))
    model = FeatureBasedClassifier(
        BertEncoder.from_bert_config(config), num_classes=3, features="last", per_token=per_token
    )
    model.build()
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    run_dir = tmp_path / "run"
    prefix = tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(run_dir / "ckpt"))
    config.to_json_file(str(run_dir / "bert_config.json"))

    written = convert_checkpoint(prefix, str(tmp_path / "hf"), "safetensors")
    assert not [name for name in load_file(written) if name.startswith("classifier")]
    hf_config = json.loads((tmp_path / "hf" / "config.json").read_text(encoding="utf-8"))
    assert hf_config["architectures"] == ["BertModel"]

    classifier = BertClassifier(BertEncoder.from_bert_config(config), num_classes=3)
    classifier.build()
    initial_head = classifier.classifier.dense.kernel.numpy().copy()
    with caplog.at_level(logging.WARNING):
        load_bert_weights(classifier, prefix)
    assert any("feature-based run" in r.getMessage() for r in caplog.records)
    np.testing.assert_array_equal(classifier.classifier.dense.kernel.numpy(), initial_head)
    np.testing.assert_array_equal(
        classifier.encoder.embeddings.word_embeddings.embeddings.numpy(),
        model.encoder.embeddings.word_embeddings.embeddings.numpy(),
    )


def test_a_feature_based_run_is_read_back_with_its_head(tmp_path):
    """The same feature-based run's checkpoint read into a FeatureBasedClassifier (evaluating
    it from --init_checkpoint): its own head, the run's outputs."""
    from official_bert.models.feature_based_classifier import FeatureBasedClassifier

    config = read_bert_config(str(HEADS / "sequence_classification" / "config.json"))

    def feature_based():
        model = FeatureBasedClassifier(BertEncoder.from_bert_config(config), num_classes=3)
        model.build()
        return model

    trained = feature_based()
    optimizer = keras.optimizers.Adam()
    optimizer.build(trained.trainable_variables)
    prefix = tf.train.Checkpoint(model=trained, optimizer=optimizer).save(str(tmp_path / "ckpt"))
    again = feature_based()
    load_bert_weights(again, prefix, require_heads=True)
    reference = np.load(HEADS / "sequence_classification" / "outputs.npz")
    inputs = {
        "input_word_ids": reference["input_ids"],
        "input_mask": reference["input_mask"],
        "input_type_ids": reference["token_type_ids"],
    }
    np.testing.assert_array_equal(again(inputs), trained(inputs))


def test_a_multiple_choice_head_is_told_from_a_regressors_by_the_class(tmp_path):
    """BertForMultipleChoice names its head as a 1-label BertForSequenceClassification (a
    regressor) does (`classifier` [1, hidden] on the pooled output): the class config.json names
    decides. Named, the file fills a BertMultipleChoice, PyTorch's logits, also as a
    fine-tuning run's --init_checkpoint; unnamed, it is read as a 1-output sentence classifier,
    as before, which gives each (context, choice) row the same score."""
    from official_bert.tasks.finetuning import load_init_checkpoint

    folder = HEADS / "multiple_choice"
    model = BertMultipleChoice(
        BertEncoder.from_bert_config(read_bert_config(str(folder / "config.json")))
    )
    model.build()
    load_init_checkpoint(model, str(folder))
    _assert_matches_pytorch(model, "multiple_choice")

    bare = _fixture_copy("multiple_choice", tmp_path / "no_architecture", architectures=None)
    regressor = _model_from(bare, "safetensors", bare / "config.json")
    assert type(regressor) is BertClassifier and regressor.num_classes == 1
    reference = np.load(folder / "outputs.npz")
    rows = {
        name: reference[key].reshape(-1, reference[key].shape[-1])
        for name, key in (
            ("input_word_ids", "input_ids"),
            ("input_mask", "input_mask"),
            ("input_type_ids", "token_type_ids"),
        )
    }
    np.testing.assert_allclose(regressor(rows), reference["logits"].reshape(-1, 1), atol=2e-5)


def test_a_multiple_choice_model_is_written_to_keras_hub_as_its_encoder(tmp_path, caplog):
    """keras-hub has no multiple-choice task: a keras_hub output is a BertBackbone preset of the
    encoder (no task files), and a warning says that the head is not written."""
    from official_bert.checkpoints.loading import find_bert_config

    folder = HEADS / "multiple_choice"
    # keras-hub's BertBackbone runs the tanh GELU only ("gelu_new" in a Hugging Face config).
    tanh = _fixture_copy("multiple_choice", tmp_path / "tanh", hidden_act="gelu_new")
    preset = tmp_path / "preset"
    with caplog.at_level(logging.WARNING):
        convert_checkpoint(str(tanh), str(preset), "keras_hub")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("the multiple_choice head is not written" in message for message in warnings)
    assert not (preset / "task.json").exists() and not (preset / "task.weights.h5").exists()
    encoder = BertEncoder.from_bert_config(read_bert_config(find_bert_config(str(preset))))
    encoder.build()
    load_bert_weights(encoder, str(preset))
    tensors = load_file(folder / "model.safetensors")
    np.testing.assert_array_equal(
        encoder.embeddings.word_embeddings.embeddings.numpy(),
        tensors["bert.embeddings.word_embeddings.weight"],
    )
    np.testing.assert_array_equal(
        encoder.pooler.kernel.numpy(), tensors["bert.pooler.dense.weight"].T
    )


def test_a_multi_label_run_converts_as_a_multi_label_classifier(tmp_path):
    """A multi-label run (its tuned thresholds beside the checkpoints) becomes transformers'
    multi-label sequence classifier (sigmoid per label); an HF input's problem_type is kept."""
    from official_bert.side_file_names import label_thresholds_path

    folder = HEADS / "sequence_classification"
    model = _model_from(folder, "safetensors", folder / "config.json")
    run_dir = tmp_path / "run"
    prefix = tf.train.Checkpoint(model=model).save(str(run_dir / "ckpt"))
    read_bert_config(str(folder / "config.json")).to_json_file(str(run_dir / "bert_config.json"))
    convert_checkpoint(prefix, str(tmp_path / "single"), "safetensors")
    config = json.loads((tmp_path / "single" / "config.json").read_text(encoding="utf-8"))
    assert "problem_type" not in config

    with open(label_thresholds_path(str(run_dir)), "w", encoding="utf-8") as writer:
        json.dump({"labels": ["a", "b", "c"], "thresholds": [0.5, 0.4, 0.6]}, writer)
    convert_checkpoint(prefix, str(tmp_path / "multi"), "safetensors")
    config = json.loads((tmp_path / "multi" / "config.json").read_text(encoding="utf-8"))
    assert config["problem_type"] == "multi_label_classification"

    convert_checkpoint(str(tmp_path / "multi"), str(tmp_path / "again"), "safetensors")
    config = json.loads((tmp_path / "again" / "config.json").read_text(encoding="utf-8"))
    assert config["problem_type"] == "multi_label_classification"


def test_a_regression_run_converts_with_its_problem_type(tmp_path):
    """A one-output head (STS-B) is said to be a regressor in the config.json written, not left
    for transformers to infer from the labels' dtype."""
    from tests.tiny_data import tiny_bert_config

    config = tiny_bert_config()
    model = BertClassifier(BertEncoder.from_bert_config(config), num_classes=1)
    model.build()
    run_dir = tmp_path / "run"
    prefix = tf.train.Checkpoint(model=model).save(str(run_dir / "ckpt"))
    config.to_json_file(str(run_dir / "bert_config.json"))
    convert_checkpoint(prefix, str(tmp_path / "hf"), "safetensors")
    written = json.loads((tmp_path / "hf" / "config.json").read_text(encoding="utf-8"))
    assert written["problem_type"] == "regression"
    assert read_hf_architectures(str(tmp_path / "hf" / "config.json")) == [
        "BertForSequenceClassification"
    ]


def test_an_output_holding_an_initialized_pooler_is_warned_of(tmp_path, caplog):
    """A pooler-less file (BertForQuestionAnswering) written where a pooler is part of the layout
    (tf1) warns that the output's pooler is an initialization; written as transformers' class
    (no pooler), or from a file with a pooler, nothing is said."""

    def warned(folder, output_format):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            convert_checkpoint(
                str(HEADS / folder), str(tmp_path / f"{folder}_{output_format}"), output_format
            )
        return any("randomly initialized one" in r.getMessage() for r in caplog.records)

    assert warned("question_answering", "tf1")
    assert not warned("question_answering", "safetensors")
    assert not warned("sequence_classification", "tf1")


def test_hugging_face_tokenizer_casing_is_read_and_written(tmp_path):
    """tokenizer_config.json's do_lower_case is the casing of a Hugging Face folder where its
    vocabulary agrees (false with cased tokens; not taken for a vocabulary without upper-case
    letters, as bert-base-chinese records); a safetensors output gets a tokenizer_config.json
    with the input's casing, so transformers' AutoTokenizer reads vocab.txt as this model's."""
    from official_bert.checkpoints.loading import find_lower_case

    def folder(name, vocab, do_lower_case):
        path = tmp_path / name
        path.mkdir()
        (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
        if do_lower_case is not None:
            (path / "tokenizer_config.json").write_text(
                json.dumps({"do_lower_case": do_lower_case}), encoding="utf-8"
            )
        return str(path)

    cased = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "The", "the", "中"]
    uncased = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "中", "##s"]
    assert find_lower_case(folder("cased", cased, False)) is False
    assert find_lower_case(folder("chinese", uncased, False)) is None
    assert find_lower_case(folder("uncased", uncased, True)) is True
    assert find_lower_case(folder("unsaid", cased, None)) is None

    source = HEADS / "sequence_classification"
    with_vocab = tmp_path / "with_vocab"
    with_vocab.mkdir()
    for name in ("config.json", "model.safetensors"):
        (with_vocab / name).write_bytes((source / name).read_bytes())
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"Word{i}" for i in range(94)]
    (with_vocab / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    convert_checkpoint(str(with_vocab), str(tmp_path / "out"), "safetensors")
    written = json.loads((tmp_path / "out" / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert written["tokenizer_class"] == "BertTokenizer"
    assert written["do_lower_case"] is False  # guessed: the vocabulary is cased
    assert written["model_max_length"] == 40  # the model's positions
    assert find_lower_case(str(tmp_path / "out")) is False


def test_a_causal_lm_head_is_not_taken_for_the_mlm_head(tmp_path, caplog):
    """A BertLMHeadModel file names its causal LM head as BertForMaskedLM names the MLM head
    (cls.predictions): not converted, as the warning says; the encoder alone."""
    from official_bert.checkpoints.pytorch_state_dict import load_pytorch_state_dict

    source = FIXTURES / "hf_weights" / "bert"
    causal = tmp_path / "lm_head_model"
    causal.mkdir()
    tensors = load_pytorch_state_dict(str(source / "pytorch_model.bin"))
    tensors = {k: v for k, v in tensors.items() if not k.startswith("cls.seq_relationship")}
    assert any(name.startswith("cls.predictions.") for name in tensors)
    save_file(tensors, str(causal / "model.safetensors"))
    values = json.loads((source / "config.json").read_text(encoding="utf-8"))
    values.update(architectures=["BertLMHeadModel"], is_decoder=True)
    (causal / "config.json").write_text(json.dumps(values), encoding="utf-8")
    # As a decoder it is refused outright (its attention is causal, the encoder's is not) ...
    with pytest.raises(ValueError, match="is_decoder is true"):
        _model_from(causal, "safetensors", causal / "config.json")
    # ... and as the class alone, its head is left out.
    values.update(is_decoder=False)
    (causal / "config.json").write_text(json.dumps(values), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        model = _model_from(causal, "safetensors", causal / "config.json")
    assert type(model) is BertEncoder
    assert any("BertLMHeadModel" in r.getMessage() for r in caplog.records)


def test_a_heads_labels_are_matched_to_the_tasks_by_name(tmp_path, caplog):
    """A Hugging Face NER model's head (its tags named in id2label) starts a tagging task whose
    tags are numbered otherwise: its outputs are reordered to the task's numbering, so that
    predicting with it alone is right; tags of another set are refused for predicting and
    replaced by a new head for training."""
    from types import SimpleNamespace

    from official_bert.tasks.finetuning import initialize_weights

    source = HEADS / "token_classification"
    named = _named_ner_copy(tmp_path / "named")
    config = read_bert_config(str(named / "config.json"))

    def tagger():
        model = BertTokenTagger(BertEncoder.from_bert_config(config), num_tags=5)
        model.build()
        return model

    reference = np.load(source / "outputs.npz")
    inputs = {
        "input_word_ids": reference["input_ids"],
        "input_mask": reference["input_mask"],
        "input_type_ids": reference["token_type_ids"],
    }
    task_tags = sorted(NER_TAGS)  # B-LOC, B-PER, I-LOC, I-PER, O
    options = SimpleNamespace(init_checkpoint=str(named), hub_module_handle=None, do_train=False)
    model = tagger()
    initialize_weights(model, options, labels=task_tags)
    expected = reference["logits"][..., [NER_TAGS.index(tag) for tag in task_tags]]
    np.testing.assert_allclose(model(inputs), expected, atol=2e-5)

    other_tags = ["B-ORG", "B-PER", "I-ORG", "I-PER", "O"]
    with pytest.raises(ValueError, match=r"holds a head for the labels \['O', 'B-PER'"):
        initialize_weights(tagger(), options, labels=other_tags)
    model = tagger()
    initial_kernel = model.tagger.dense.kernel.numpy().copy()
    with caplog.at_level(logging.WARNING):
        initialize_weights(
            model, SimpleNamespace(**{**vars(options), "do_train": True}), labels=other_tags
        )
    assert any("a new head" in r.getMessage() for r in caplog.records)
    np.testing.assert_array_equal(model.tagger.dense.kernel.numpy(), initial_kernel)
    np.testing.assert_array_equal(
        model.encoder.embeddings.word_embeddings.embeddings.numpy(),
        load_file(source / "model.safetensors")["bert.embeddings.word_embeddings.weight"],
    )


@pytest.mark.parametrize(
    "folder, make_model, file_class",
    [
        (
            "sequence_classification",
            lambda encoder: BertTokenTagger(encoder, num_tags=3),
            "BertForSequenceClassification",
        ),
        (
            "multiple_choice",
            lambda encoder: BertClassifier(encoder, num_classes=1),
            "BertForMultipleChoice",
        ),
        (
            "token_classification",
            lambda encoder: BertClassifier(encoder, num_classes=5),
            "BertForTokenClassification",
        ),
    ],
    ids=[
        "sentence_classifier_into_tagger",
        "multiple_choice_into_regressor",
        "ner_into_classifier",
    ],
)
def test_a_head_of_another_hugging_face_class_is_not_taken_for_the_tasks(
    folder, make_model, file_class, tmp_path, caplog
):
    """transformers names a sentence classifier's, a token classifier's and a multiple-choice
    model's heads alike (`classifier.*`): a head of the same size fits all three. The class
    config.json names decides: predicting from another class's head is refused, training
    starts a new one (with a warning); a file without a class is read as before."""
    from official_bert.tasks.finetuning import load_init_checkpoint

    source = HEADS / folder
    config = read_bert_config(str(source / "config.json"))

    def fresh_model():
        keras.utils.set_random_seed(4)
        model = make_model(BertEncoder.from_bert_config(config))
        model.build()
        return model

    with pytest.raises(ValueError, match=f"is a Hugging Face {file_class}: its `classifier` head"):
        load_init_checkpoint(fresh_model(), str(source))
    model = fresh_model()
    initial = [weight.numpy() for weight in model.weights]
    with caplog.at_level(logging.WARNING):
        load_init_checkpoint(model, str(source), new_heads_allowed=True)
    assert "training starts from its encoder and a new head" in caplog.text
    head = model.tagger if isinstance(model, BertTokenTagger) else model.classifier
    for variable, before in zip(model.weights, initial, strict=True):
        is_head = any(variable is weight for weight in head.weights)
        changed = not np.array_equal(variable.numpy(), before)
        # The head keeps its initialization; the encoder's weights (pooler aside) were read.
        assert changed != is_head or "pooler" in variable.path, variable.path
    bare = _fixture_copy(folder, tmp_path / "no_architecture", architectures=None)
    model = fresh_model()
    load_init_checkpoint(model, str(bare))
    assert not np.array_equal(model.weights[-2].numpy(), initial[-2])


def test_predicting_from_a_checkpoint_without_the_tasks_head_is_warned_of(caplog):
    """A question-answering model's file holds no sentence classifier: evaluating or predicting
    from it (no training) would run a random head, which the original did silently."""
    from types import SimpleNamespace

    from official_bert.tasks.finetuning import initialize_weights

    config = read_bert_config(str(HEADS / "question_answering" / "config.json"))
    for folder, make_model, warned in (
        ("question_answering", lambda e: BertClassifier(e, num_classes=2), True),
        ("question_answering", BertSpanLabeler, False),
        ("sequence_classification", lambda e: BertClassifier(e, num_classes=3), False),
    ):
        model = make_model(BertEncoder.from_bert_config(config))
        model.build()
        for do_train in (False, True):
            caplog.clear()
            with caplog.at_level(logging.WARNING):
                initialize_weights(
                    model,
                    SimpleNamespace(
                        init_checkpoint=str(HEADS / folder),
                        hub_module_handle=None,
                        do_train=do_train,
                    ),
                )
            message = "runs a randomly initialized head"
            assert (message in caplog.text) == (warned and not do_train), (folder, do_train)
