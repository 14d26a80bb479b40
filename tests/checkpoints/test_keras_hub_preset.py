"""keras-hub BERT presets: directories keras-hub 0.32 wrote with `save_to_preset`
(tests/fixtures/keras_hub_presets, made by tests/fixtures/make_keras_hub_presets.py), read
without keras-hub, against the outputs keras-hub computed from the same weights."""

import json
import shutil

import ml_dtypes
import numpy as np
import pytest

from official_bert.checkpoints import detect_checkpoint_format, load_bert_weights
from official_bert.checkpoints.conversion import convert_checkpoint
from official_bert.checkpoints.keras_hub_weights import load_keras_hub_arrays
from official_bert.checkpoints.loading import (
    find_bert_config,
    find_lower_case,
    find_vocab_file,
    read_bert_config,
)
from official_bert.models import BertClassifier, BertEncoder
from official_bert.tokenization import FullTokenizer
from tests.conftest import FIXTURES

PRESETS = FIXTURES / "keras_hub_presets"
REFERENCE = np.load(PRESETS / "outputs.npz")
MASKED_LM_REFERENCE = np.load(PRESETS / "masked_lm_outputs.npz")


def built_encoder(preset):
    config = read_bert_config(find_bert_config(str(preset)))
    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    return encoder


def encoder_inputs(token_ids):
    return {
        "input_word_ids": token_ids,
        "input_mask": REFERENCE["padding_mask"],
        "input_type_ids": REFERENCE["segment_ids"],
    }


def assert_backbone_matches(encoder, name, token_ids):
    outputs = encoder(encoder_inputs(token_ids), training=False)
    valid = REFERENCE["padding_mask"].astype(bool)
    np.testing.assert_allclose(
        outputs["sequence_output"].numpy()[valid],
        REFERENCE[f"{name}_sequence_output"][valid],
        atol=1e-5,
    )
    np.testing.assert_allclose(
        outputs["pooled_output"].numpy(), REFERENCE[f"{name}_pooled_output"], atol=1e-5
    )


def assert_classifier_matches(preset):
    """A BertClassifier loaded from `preset` (head required) computes keras-hub's logits."""
    config = read_bert_config(find_bert_config(str(preset)))
    model = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2)
    model.build()
    load_bert_weights(model, str(preset), require_heads=True)
    logits = model(encoder_inputs(REFERENCE["classifier_token_ids"]), training=False)
    np.testing.assert_allclose(logits.numpy(), REFERENCE["classifier_logits"], atol=1e-5)
    return model


def masked_lm_logits(model):
    """A BertPretrainer's masked-LM logits on the inputs keras-hub's BertMaskedLM was given."""
    reference = MASKED_LM_REFERENCE
    inputs = {
        "input_word_ids": reference["token_ids"],
        "input_mask": reference["padding_mask"],
        "input_type_ids": reference["segment_ids"],
        "masked_lm_positions": reference["mask_positions"],
    }
    return model(inputs, training=False)["mlm_logits"].numpy()


def assert_masked_lm_matches(model):
    """The model computes keras-hub's BertMaskedLM logits (keras-hub 0.32, the fixture)."""
    np.testing.assert_allclose(masked_lm_logits(model), MASKED_LM_REFERENCE["logits"], atol=1e-5)


def loaded_masked_lm(preset):
    """The model convert_checkpoint reads from `preset`: a BertPretrainer where it holds a
    BertMaskedLM."""
    from official_bert.checkpoints.conversion import load_model_with_available_heads

    config = read_bert_config(find_bert_config(str(preset)))
    return load_model_with_available_heads(
        config, str(preset), detect_checkpoint_format(str(preset))
    )


def test_backbone_matches_keras_hub_on_the_same_weights():
    preset = PRESETS / "cased_zh"
    assert detect_checkpoint_format(str(preset)) == "keras_hub"
    assert detect_checkpoint_format(str(preset / "model.weights.h5")) == "keras_hub"
    config = read_bert_config(find_bert_config(str(preset)))
    assert (config.vocab_size, config.hidden_size, config.num_hidden_layers) == (38, 16, 2)
    assert (config.num_attention_heads, config.intermediate_size) == (2, 24)
    assert (config.max_position_embeddings, config.type_vocab_size) == (24, 2)
    assert config.hidden_act == "gelu"  # keras-hub's BertBackbone runs the tanh form
    encoder = built_encoder(preset)
    assert load_bert_weights(encoder, str(preset)) == "keras_hub"
    assert_backbone_matches(encoder, "cased_zh", REFERENCE["token_ids"])
    # The weights file alone reads the same.
    from_file = built_encoder(preset)
    load_bert_weights(from_file, str(preset / "model.weights.h5"))
    for got, want in zip(from_file.weights, encoder.weights, strict=True):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_vocab_and_casing_come_from_the_preset():
    cased = PRESETS / "cased_zh"
    vocab = find_vocab_file(find_bert_config(str(cased)))
    assert vocab == str(cased / "assets" / "tokenizer" / "vocabulary.txt")
    assert find_lower_case(str(cased)) is False
    assert find_lower_case(str(PRESETS / "classifier")) is True
    tokenizer = FullTokenizer(vocab, do_lower_case=False)
    assert tokenizer.tokenize("The fox 北京天气") == ["The", "fox", "北", "京", "天", "气"]


def test_bfloat16_weights_are_read_as_their_float32_values():
    arrays, _ = load_keras_hub_arrays(str(PRESETS / "bfloat16"))
    full, _ = load_keras_hub_arrays(str(PRESETS / "cased_zh"))
    assert sorted(arrays) == sorted(full)
    for name, value in arrays.items():
        assert value.dtype == np.float32, name
        rounded = full[name].astype(ml_dtypes.bfloat16).astype(np.float32)
        np.testing.assert_array_equal(value, rounded, err_msg=name)


def test_text_classifier_head_is_read():
    preset = PRESETS / "classifier"
    model = assert_classifier_matches(preset)
    assert_backbone_matches(model.encoder, "classifier", REFERENCE["classifier_token_ids"])


def test_masked_lm_head_is_read_with_keras_hubs_activation_and_epsilon():
    """keras-hub's BertMaskedLM head runs the exact GELU with LayerNorm epsilon 1e-5 (its
    backbone the tanh GELU with 1e-12): the preset's config says so, and the model read from
    it, masked-LM head only, computes keras-hub's logits."""
    from official_bert.models import BertPretrainer

    preset = PRESETS / "masked_lm"
    config = read_bert_config(find_bert_config(str(preset)))
    assert config.hidden_act == "gelu"
    assert config.extra_fields == {
        "masked_lm_hidden_act": "gelu_exact",
        "masked_lm_layer_norm_eps": 1e-5,
    }
    # Without a BertMaskedLM beside it, a backbone's config is the original's.
    assert read_bert_config(find_bert_config(str(PRESETS / "cased_zh"))).extra_fields == {}
    model = loaded_masked_lm(preset)
    assert isinstance(model, BertPretrainer) and model.next_sentence is None
    assert_masked_lm_matches(model)
    outputs = model.encoder(encoder_inputs(MASKED_LM_REFERENCE["token_ids"]), training=False)
    valid = REFERENCE["padding_mask"].astype(bool)
    np.testing.assert_allclose(
        outputs["sequence_output"].numpy()[valid],
        MASKED_LM_REFERENCE["sequence_output"][valid],
        atol=1e-5,
    )


def test_a_masked_lm_head_that_runs_otherwise_is_not_read(caplog):
    """A head built as the original's (the encoder's tanh GELU, epsilon 1e-12) would compute
    other logits from keras-hub's weights: it keeps its initialization, with a warning, and a
    model that requires it is refused."""
    import logging

    from official_bert.checkpoints.variable_table import CheckpointMismatchError
    from official_bert.models import BertPretrainer

    preset = PRESETS / "masked_lm"
    model = BertPretrainer(built_encoder(preset), use_next_sentence_label=False)
    model.build()
    with caplog.at_level(logging.WARNING):
        load_bert_weights(model, str(preset))
    assert any("would compute other logits" in r.getMessage() for r in caplog.records)
    np.testing.assert_array_equal(model.masked_lm.output_bias.numpy(), 0.0)
    with pytest.raises(CheckpointMismatchError, match="cls/predictions/output_bias"):
        load_bert_weights(model, str(preset), require_heads=True)


def test_pretraining_continues_from_a_masked_lm_preset(tmp_path):
    """run_pretraining's model, given only the preset as init_checkpoint, reads the preset's
    config.json (and, for the fill-mask export, its vocabulary) and starts from keras-hub's
    masked-LM head; its bert_config.json keeps the head's activation and epsilon for the
    checkpoints it writes."""
    from official_bert.tasks.pretraining import PretrainingOptions, PretrainingTask

    preset = PRESETS / "masked_lm"
    options = PretrainingOptions(
        init_checkpoint=str(preset),
        input_file="unused.tfrecord",
        output_dir=str(tmp_path),
        do_train=True,
        use_next_sentence_label=False,
        export_dir=str(tmp_path / "fill_mask"),
    )
    assert options.bert_config_file == str(preset / "config.json")
    assert options.vocab_file == str(preset / "assets" / "tokenizer" / "vocabulary.txt")
    task = PretrainingTask(options)
    model = task.build_model()
    task.initialize(model)
    assert_masked_lm_matches(model)
    options.bert_config.to_json_file(str(tmp_path / "bert_config.json"))
    written = json.loads((tmp_path / "bert_config.json").read_text())
    assert written["masked_lm_hidden_act"] == "gelu_exact"
    assert written["masked_lm_layer_norm_eps"] == 1e-5


def test_masked_lm_preset_converts_to_the_original_layout(tmp_path, caplog):
    """tf1 output: cls/predictions/... and a bert_config.json that builds the same head; the
    original code would run the encoder's activation and epsilon there, and a warning says so
    (as for a safetensors output, which transformers reads so)."""
    import logging

    with caplog.at_level(logging.WARNING):
        convert_checkpoint(str(PRESETS / "masked_lm"), str(tmp_path / "tf1"), "tf1")
    assert any(
        "the original code runs the encoder's activation" in r.getMessage() for r in caplog.records
    )
    model = loaded_masked_lm(tmp_path / "tf1")
    assert model.next_sentence is None
    assert_masked_lm_matches(model)


def test_converted_to_the_original_layout_with_its_vocab(tmp_path):
    preset = PRESETS / "classifier"
    written = convert_checkpoint(str(preset), str(tmp_path / "tf1"), "tf1")
    assert (tmp_path / "tf1" / "vocab.txt").read_text() == (
        preset / "assets" / "tokenizer" / "vocabulary.txt"
    ).read_text()
    encoder = built_encoder(tmp_path / "tf1")
    load_bert_weights(encoder, written)
    assert_backbone_matches(encoder, "classifier", REFERENCE["classifier_token_ids"])


def test_a_backbone_preset_converts_without_a_classifier_warning(tmp_path, caplog):
    """Converting a backbone-only preset tries a pretrainer and a classifier among the models
    it may hold; those tries are refused without a warning that a head keeps its
    initialization (the output is the encoder)."""
    import logging

    with caplog.at_level(logging.INFO):
        convert_checkpoint(str(PRESETS / "cased_zh"), str(tmp_path / "tf1"), "tf1")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [m for m in warnings if "BertTextClassifier" in m or "BertMaskedLM" in m], warnings
    # Fine-tuning a classifier from it still says so.
    caplog.clear()
    model = BertClassifier(built_encoder(PRESETS / "cased_zh"), num_classes=2)
    model.build()
    with caplog.at_level(logging.WARNING):
        load_bert_weights(model, str(PRESETS / "cased_zh"))
    assert any("no BertTextClassifier head" in r.getMessage() for r in caplog.records)


def test_other_keras_hub_models_and_damaged_files_are_named(tmp_path):
    other = tmp_path / "roberta"
    shutil.copytree(PRESETS / "cased_zh", other)
    values = json.loads((other / "config.json").read_text())
    values["class_name"] = "RobertaBackbone"
    (other / "config.json").write_text(json.dumps(values))
    with pytest.raises(ValueError, match="keras-hub RobertaBackbone preset; only BertBackbone"):
        read_bert_config(str(other / "config.json"))

    damaged = tmp_path / "damaged"
    shutil.copytree(PRESETS / "cased_zh", damaged)
    (damaged / "model.weights.h5").write_bytes(b"\0" * 64)
    with pytest.raises(ValueError, match=r"model.weights.h5: not a readable HDF5 file"):
        load_bert_weights(built_encoder(PRESETS / "cased_zh"), str(damaged))

    import h5py

    missing = tmp_path / "missing"
    shutil.copytree(PRESETS / "cased_zh", missing)
    with h5py.File(missing / "model.weights.h5", "a") as file:
        del file["layers/transformer_encoder_1/_feedforward_output_dense"]
    with pytest.raises(ValueError, match=r"no 'layers/transformer_encoder_1/_feedforward_output"):
        load_bert_weights(built_encoder(PRESETS / "cased_zh"), str(missing))

    swapped = tmp_path / "swapped"
    shutil.copytree(PRESETS / "cased_zh", swapped)
    with h5py.File(swapped / "model.weights.h5", "a") as file:
        file["layers/dense/vars"].attrs["name"] = "something_else"
    with pytest.raises(ValueError, match="layers/dense is named 'something_else'"):
        load_bert_weights(built_encoder(PRESETS / "cased_zh"), str(swapped))


def _sentiment_rows(count, rng):
    words = {"1": ["great", "fun", "good"], "0": ["bad", "boring", "not"]}
    rows = ["sentence\tlabel"]
    for _ in range(count):
        label = str(rng.integers(2))
        word = rng.choice(words[label])
        filler = " ".join(rng.choice(["the", "movie", "plot", "was", "very", "it"], size=3))
        # Upper case: only the preset's lowercasing tokenizer finds these in its vocab.
        rows.append(f"{filler} {word.upper()} .\t{label}")
    return "\n".join(rows) + "\n"


def test_run_classifier_fine_tunes_a_preset_with_the_original_flags_only(tmp_path):
    """--init_checkpoint names the preset; its config, vocab and casing come with it."""
    from official_bert.tasks.classification import ClassifierOptions
    from tests.conftest import REPO_ROOT
    from tests.warm_interpreter import run_script

    preset = PRESETS / "classifier"
    options = ClassifierOptions(
        task_name="SST-2",
        data_dir=str(tmp_path),
        output_dir=str(tmp_path / "o"),
        init_checkpoint=str(preset),
        do_train=True,
    )
    assert options.vocab_file == str(preset / "assets" / "tokenizer" / "vocabulary.txt")
    assert options.do_lower_case is True
    assert options.bert_config.vocab_size == 23

    rng = np.random.default_rng(5)
    (tmp_path / "train.tsv").write_text(_sentiment_rows(192, rng), encoding="utf-8")
    (tmp_path / "dev.tsv").write_text(_sentiment_rows(64, rng), encoding="utf-8")
    result = run_script(
        [
            str(REPO_ROOT / "run_classifier.py"),
            "--task_name=SST-2",
            "--do_train=true",
            "--do_eval=true",
            f"--data_dir={tmp_path}",
            f"--init_checkpoint={preset}",
            f"--output_dir={tmp_path / 'out'}",
            "--max_seq_length=16",
            "--train_batch_size=16",
            "--learning_rate=1e-3",
            "--num_train_epochs=3",
        ],
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    results = (tmp_path / "out" / "eval_results.txt").read_text()
    accuracy = float(results.split("eval_accuracy = ")[1].split()[0])
    assert accuracy >= 0.9, results


def test_exported_encoder_keeps_the_preset_vocab_and_casing(tmp_path):
    """export_tfhub from a preset alone: the vocabulary and casing come from it, and the
    SavedModel computes what keras-hub did."""
    import tensorflow as tf

    from official_bert.export.tfhub_export import export_tfhub

    preset = PRESETS / "cased_zh"
    export_tfhub("model", str(tmp_path / "encoder"), None, model_checkpoint_path=str(preset))
    exported = tf.saved_model.load(str(tmp_path / "encoder"))
    assert bool(exported.do_lower_case.numpy()) is False  # the preset's tokenizer.json
    vocab = exported.vocab_file.asset_path.numpy().decode()
    assert open(vocab, encoding="utf-8").read() == (
        preset / "assets" / "tokenizer" / "vocabulary.txt"
    ).read_text(encoding="utf-8")
    outputs = exported(
        {
            "input_word_ids": tf.constant(REFERENCE["token_ids"]),
            "input_mask": tf.constant(REFERENCE["padding_mask"]),
            "input_type_ids": tf.constant(REFERENCE["segment_ids"]),
        },
        training=False,
    )
    np.testing.assert_allclose(
        outputs["pooled_output"].numpy(), REFERENCE["cased_zh_pooled_output"], atol=1e-5
    )


def _datasets(path):
    """{address: (value, the name recorded on its vars group)} of a Keras weights file."""
    import h5py

    found = {}
    with h5py.File(path, "r") as file:

        def visit(name, item):
            if isinstance(item, h5py.Dataset):
                found[name] = (item[()], item.parent.attrs.get("name"))

        file.visititems(visit)
    return found


def test_written_preset_is_the_file_keras_hub_writes(tmp_path):
    """Read from keras-hub's preset and written back: the same datasets at the same Keras
    addresses with the same values and layer names, the same sizes in config.json, the same
    vocabulary and casing (keras-hub loads it; checked by hand, see docs/checkpoints.md)."""
    preset = PRESETS / "cased_zh"
    written = convert_checkpoint(str(preset), str(tmp_path / "preset"), "keras_hub")
    assert written == str(tmp_path / "preset" / "model.weights.h5")
    theirs, ours = _datasets(preset / "model.weights.h5"), _datasets(written)
    assert sorted(ours) == sorted(theirs)
    for address, (value, name) in theirs.items():
        np.testing.assert_array_equal(ours[address][0], value, err_msg=address)
        if address.count("/") == 3:  # a top layer's or a transformer layer's own variables
            assert ours[address][1] == name, address
    config = json.loads((tmp_path / "preset" / "config.json").read_text())
    want = json.loads((preset / "config.json").read_text())
    assert config["registered_name"] == want["registered_name"] == "keras_hub>BertBackbone"
    assert config["config"] == want["config"]
    assert find_lower_case(str(tmp_path / "preset")) is False
    assert (tmp_path / "preset" / "assets" / "tokenizer" / "vocabulary.txt").read_bytes() == (
        preset / "assets" / "tokenizer" / "vocabulary.txt"
    ).read_bytes()


def test_original_checkpoint_written_as_a_preset_keeps_its_outputs(tmp_path):
    """An original TF1 checkpoint as a keras-hub preset, read back: the original code's outputs."""
    original = FIXTURES / "orig_tiny_v1000"
    convert_checkpoint(str(original), str(tmp_path / "preset"), "keras_hub")
    assert detect_checkpoint_format(str(tmp_path / "preset")) == "keras_hub"
    assert find_lower_case(str(tmp_path / "preset")) is True  # guessed: no capitals in its vocab
    tokenizer = json.loads((tmp_path / "preset" / "tokenizer.json").read_text())["config"]
    assert tokenizer["strip_accents"] is True  # the original's do_lower_case strips accents
    encoder = built_encoder(tmp_path / "preset")
    load_bert_weights(encoder, str(tmp_path / "preset"))
    reference = np.load(original / "outputs.npz")
    outputs = encoder(
        {
            "input_word_ids": reference["input_ids"],
            "input_mask": reference["input_mask"],
            "input_type_ids": reference["token_type_ids"],
        },
        training=False,
    )
    valid = reference["input_mask"].astype(bool)
    np.testing.assert_allclose(
        outputs["sequence_output"].numpy()[valid], reference["sequence_output"][valid], atol=1e-5
    )
    np.testing.assert_allclose(
        outputs["pooled_output"].numpy(), reference["pooled_output"], atol=1e-5
    )


def test_a_model_keras_hub_cannot_run_is_not_written(tmp_path):
    """Hugging Face's "gelu" is the exact erf form; keras-hub's BertBackbone runs the tanh one."""
    with pytest.raises(ValueError, match="keras-hub BertBackbone runs the tanh GELU"):
        convert_checkpoint(
            str(FIXTURES / "hf_weights" / "bert"), str(tmp_path / "preset"), "keras_hub"
        )
    assert not (tmp_path / "preset").exists()


def _damaged_copy(tmp_path, name, change):
    """A copy of the cased_zh preset with `change(h5py file)` applied to its weights."""
    import h5py

    copy = tmp_path / name
    shutil.copytree(PRESETS / "cased_zh", copy)
    with h5py.File(copy / "model.weights.h5", "a") as file:
        change(file)
    return copy


def _replace(address, value):
    def change(file):
        del file[address]
        file[address] = value

    return change


@pytest.mark.parametrize(
    "name, change, message",
    [
        (
            "query_heads_and_size_swapped",  # [hidden, 8, 2] where the file had [hidden, 2, 8]
            _replace(
                "layers/transformer_encoder/_self_attention_layer/query_dense/vars/0",
                np.zeros((16, 8, 2), np.float32),
            ),
            r"query_dense: kernel \[16, 8, 2\], bias \[2, 8\]; expected \[hidden, heads, head",
        ),
        (
            "output_kernel_flat",
            _replace(
                "layers/transformer_encoder_1/_self_attention_layer/output_dense/vars/0",
                np.zeros((16, 16), np.float32),
            ),
            r"output_dense: kernel \[16, 16\], bias \[16\]; expected \[heads, head_size",
        ),
        (
            "integer_gamma",
            _replace("layers/layer_normalization/vars/0", np.ones(16, np.int64)),
            r"/layers/layer_normalization/vars/0 holds int64 values; expected floats",
        ),
        (
            "vars_as_dataset",
            _replace("layers/dense/vars", np.zeros(3, np.float32)),
            r"/layers/dense/vars is a dataset where a group belongs",
        ),
        (
            "extra_layer",
            lambda file: file.copy("layers/dense", "layers/dense_1"),
            r"2 weights are not part of a keras-hub BertBackbone's weights: /layers/dense_1/vars/0",
        ),
    ],
)
def test_damaged_weights_are_named(tmp_path, name, change, message):
    damaged = _damaged_copy(tmp_path, name, change)
    with pytest.raises(ValueError, match=message) as raised:
        load_bert_weights(built_encoder(PRESETS / "cased_zh"), str(damaged))
    assert str(damaged / "model.weights.h5") in str(raised.value)


def test_a_model_with_other_heads_is_refused(tmp_path):
    from official_bert.checkpoints.variable_table import CheckpointMismatchError
    from official_bert.config import BertConfig

    values = read_bert_config(find_bert_config(str(PRESETS / "cased_zh"))).to_dict()
    values["num_attention_heads"] = 4
    encoder = BertEncoder.from_bert_config(BertConfig.from_dict(values))
    encoder.build()
    with pytest.raises(CheckpointMismatchError, match="2 attention heads; the model has 4"):
        load_bert_weights(encoder, str(PRESETS / "cased_zh"))


def test_keras_nlp_presets_and_their_classifier_name_are_read(tmp_path):
    """keras-nlp wrote `keras_nlp>` names and called the classifier BertClassifier; keras-hub
    still loads such presets."""
    preset = tmp_path / "keras_nlp"
    shutil.copytree(PRESETS / "classifier", preset)
    for name, class_name in (
        ("config.json", "BertBackbone"),
        ("tokenizer.json", "BertTokenizer"),
        ("task.json", "BertClassifier"),
    ):
        values = json.loads((preset / name).read_text())
        values["module"] = values["module"].replace("keras_hub.", "keras_nlp.")
        values["class_name"] = class_name
        values["registered_name"] = f"keras_nlp>{class_name}"
        (preset / name).write_text(json.dumps(values))
    assert detect_checkpoint_format(str(preset)) == "keras_hub"
    assert find_lower_case(str(preset)) is True
    assert_classifier_matches(preset)


def test_preset_files_are_checked_where_they_are_read(tmp_path):
    from official_bert.config import BertConfigError

    # An encoder needs no head: a classifier preset without its task weights still loads it.
    headless = tmp_path / "headless"
    shutil.copytree(PRESETS / "classifier", headless)
    (headless / "task.weights.h5").unlink()
    load_bert_weights(built_encoder(PRESETS / "classifier"), str(headless))

    # A damaged config.json: the folder is still a preset, and the error says what is wrong.
    broken = tmp_path / "broken"
    shutil.copytree(PRESETS / "cased_zh", broken)
    (broken / "config.json").write_bytes(b"\xff{")
    assert detect_checkpoint_format(str(broken)) == "keras_hub"
    with pytest.raises(BertConfigError, match=r"config.json, line 1 \(byte 0\): not UTF-8"):
        read_bert_config(str(broken / "config.json"))
    (broken / "config.json").write_bytes(b'{"config": ')
    with pytest.raises(BertConfigError, match="config.json: not valid JSON at line 1, column 12"):
        read_bert_config(str(broken / "config.json"))

    values = json.loads((PRESETS / "cased_zh" / "config.json").read_text())
    values["config"]["num_layers"] = "2"
    (broken / "config.json").write_text(json.dumps(values))
    with pytest.raises(ValueError, match="'num_layers' must be a positive integer, found '2'"):
        read_bert_config(str(broken / "config.json"))

    tokenizer = json.loads((PRESETS / "cased_zh" / "tokenizer.json").read_text())
    tokenizer["config"]["lowercase"] = "false"
    (broken / "tokenizer.json").write_text(json.dumps(tokenizer))
    with pytest.raises(ValueError, match="'lowercase' is 'false', expected true or false"):
        find_lower_case(str(broken))

    # Another keras-hub model's preset is refused where its weights are loaded too.
    values["class_name"] = "RobertaBackbone"
    values["config"]["num_layers"] = 2
    (broken / "config.json").write_text(json.dumps(values))
    with pytest.raises(ValueError, match="a keras-hub RobertaBackbone preset"):
        load_bert_weights(built_encoder(PRESETS / "cased_zh"), str(broken))


def test_preset_output_folder_holds_nothing_else(tmp_path):
    """A keras-hub preset is a folder of its own: files of another preset's task, or of
    another checkpoint, would be read with it."""
    target = tmp_path / "preset"
    shutil.copytree(PRESETS / "classifier", target)
    # keras-hub's own preset (its file names are those a preset written here may have).
    with pytest.raises(ValueError, match=r"holds a keras-hub preset that this project did not"):
        convert_checkpoint(str(PRESETS / "cased_zh"), str(target), "keras_hub")
    assert (target / "config.json").read_bytes() == (
        PRESETS / "classifier" / "config.json"
    ).read_bytes()
    (target / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ValueError, match=r"holds files that are not part of the keras-hub preset"):
        convert_checkpoint(str(PRESETS / "cased_zh"), str(target), "keras_hub")

    # A preset written here is replaced by the next one; without a vocab, its old tokenizer goes.
    target = tmp_path / "again"
    convert_checkpoint(str(PRESETS / "cased_zh"), str(target), "keras_hub")
    weights_only = tmp_path / "weights_only"
    weights_only.mkdir()
    for name in ("config.json", "model.weights.h5"):
        shutil.copy(PRESETS / "classifier" / name, weights_only / name)
    convert_checkpoint(str(weights_only), str(target), "keras_hub")
    assert not (target / "tokenizer.json").exists()
    assert not (target / "assets" / "tokenizer" / "vocabulary.txt").exists()
    assert read_bert_config(str(target / "config.json")).vocab_size == 23


def _groups_and_datasets(path):
    """{h5 path: ("group", name attribute) or ("dataset", value)} of a weights file."""
    import h5py

    found = {}
    with h5py.File(path, "r") as file:

        def visit(name, item):
            if isinstance(item, h5py.Dataset):
                found[name] = ("dataset", item[()])
            else:
                found[name] = ("group", item.attrs.get("name"))

        file.visititems(visit)
    return found


def assert_task_weights_match(theirs_path, ours_path):
    """A task.weights.h5 written here holds the groups, layer names and values of the one
    keras-hub wrote (a name keras-hub numbered, `adam_1`, is its own once: `adam`)."""
    import re

    theirs, ours = _groups_and_datasets(theirs_path), _groups_and_datasets(ours_path)
    assert sorted(ours) == sorted(theirs)
    for path, (kind, value) in theirs.items():
        if kind == "dataset":
            np.testing.assert_array_equal(ours[path][1], value, err_msg=path)
            assert ours[path][1].dtype == value.dtype, path
        else:
            unnumbered = value if value is None else re.sub(r"_\d+$", "", value)
            assert ours[path] == (kind, unnumbered), path


def test_a_classifier_is_written_as_keras_hubs_text_classifier(tmp_path):
    """keras-hub's BertTextClassifier preset read and written back: task.weights.h5 holds the
    same groups, names and values as the one keras-hub wrote, task.json and preprocessor.json
    the same task (the preprocessor padding to the model's positions), and the written preset
    is read back as a classifier with keras-hub's logits. (keras-hub 0.32 loads such a preset
    with `TextClassifier.from_preset` and computes this project's logits and, from raw text,
    its serving model's probabilities: checked by hand, see docs/checkpoints.md.)"""
    source, target = PRESETS / "classifier", tmp_path / "preset"
    convert_checkpoint(str(source), str(target), "keras_hub")
    assert_task_weights_match(source / "task.weights.h5", target / "task.weights.h5")

    task, want = (json.loads((folder / "task.json").read_text()) for folder in (target, source))
    assert task["registered_name"] == want["registered_name"] == "keras_hub>BertTextClassifier"
    for field in ("num_classes", "activation", "dropout"):
        assert task["config"][field] == want["config"][field], field
    assert {k: v for k, v in task["config"]["backbone"]["config"].items() if k != "name"} == {
        k: v for k, v in want["config"]["backbone"]["config"].items() if k != "name"
    }
    # keras-hub's metadata.json counts the backbone's parameters, a task preset's too.
    counts = [
        json.loads((d / "metadata.json").read_text())["parameter_count"] for d in (target, source)
    ]
    assert counts[0] == counts[1]
    preprocessor = json.loads((target / "preprocessor.json").read_text())
    assert preprocessor == task["config"]["preprocessor"]
    assert preprocessor["registered_name"] == "keras_hub>BertTextClassifierPreprocessor"
    assert preprocessor["config"]["sequence_length"] == 24  # the model's positions
    assert preprocessor["config"]["truncate"] == "round_robin"
    assert preprocessor["config"]["tokenizer"]["config"]["lowercase"] is True
    assert_classifier_matches(target)

    # Replaced by an encoder-only preset, the folder loses the task's files.
    convert_checkpoint(str(PRESETS / "cased_zh"), str(target), "keras_hub")
    assert not [
        p for p in ("task.json", "task.weights.h5", "preprocessor.json") if (target / p).exists()
    ]
    assert detect_checkpoint_format(str(target)) == "keras_hub"


def test_a_masked_lm_is_written_as_keras_hubs_masked_lm(tmp_path):
    """keras-hub's BertMaskedLM preset read and written back: task.weights.h5 holds the same
    groups, names and values as the one keras-hub wrote (the MaskedLMHead's, its
    mask_positions input's), task.json and preprocessor.json the same task (the preprocessor
    padding to the model's positions, masking as keras-hub's defaults), and the written preset
    is read back with keras-hub's logits. (keras-hub 0.32 loads such a preset with
    `BertMaskedLM.from_preset` and computes this project's logits: checked by hand, see
    docs/checkpoints.md.)"""
    source, target = PRESETS / "masked_lm", tmp_path / "preset"
    convert_checkpoint(str(source), str(target), "keras_hub")
    assert_task_weights_match(source / "task.weights.h5", target / "task.weights.h5")
    task, want = (json.loads((folder / "task.json").read_text()) for folder in (target, source))
    assert task["registered_name"] == want["registered_name"] == "keras_hub>BertMaskedLM"
    assert task["config"]["name"] == want["config"]["name"] == "bert_masked_lm"
    assert sorted(task["config"]) == sorted(want["config"])
    assert {k: v for k, v in task["config"]["backbone"]["config"].items() if k != "name"} == {
        k: v for k, v in want["config"]["backbone"]["config"].items() if k != "name"
    }
    preprocessor = json.loads((target / "preprocessor.json").read_text())
    assert preprocessor == task["config"]["preprocessor"]
    want_preprocessor = json.loads((source / "preprocessor.json").read_text())
    assert preprocessor["registered_name"] == want_preprocessor["registered_name"]
    assert preprocessor["config"]["sequence_length"] == 24  # the model's positions
    for field in (
        "truncate",
        "mask_selection_rate",
        "mask_selection_length",
        "mask_token_rate",
        "random_token_rate",
    ):
        assert preprocessor["config"][field] == want_preprocessor["config"][field], field
    assert preprocessor["config"]["tokenizer"]["config"]["lowercase"] is False
    assert_masked_lm_matches(loaded_masked_lm(target))


def test_a_pretrainer_is_written_as_a_masked_lm_without_its_next_sentence_head(tmp_path, caplog):
    """A pre-training run's checkpoint (tf1, both heads) whose masked-LM head runs as
    keras-hub's: a BertMaskedLM preset, computing the model's logits; keras-hub has no
    next-sentence head, so that one is left out with a warning."""
    import logging

    from official_bert.checkpoints import write_original_checkpoint
    from official_bert.models import BertPretrainer

    config = read_bert_config(find_bert_config(str(PRESETS / "masked_lm")))
    model = BertPretrainer.from_bert_config(BertEncoder.from_bert_config(config), config)
    model.build()
    rng = np.random.default_rng(7)
    for weight in model.weights:  # no weight keras-hub wrote: the model's own
        weight.assign(0.2 * rng.standard_normal(weight.shape).astype(np.float32) + weight)
    write_original_checkpoint(model, str(tmp_path / "tf1" / "bert_model.ckpt"))
    config.to_json_file(str(tmp_path / "tf1" / "bert_config.json"))
    with caplog.at_level(logging.WARNING):
        convert_checkpoint(str(tmp_path / "tf1"), str(tmp_path / "preset"), "keras_hub")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("the next_sentence head is not written" in m for m in warnings), warnings
    task = json.loads((tmp_path / "preset" / "task.json").read_text())
    assert task["class_name"] == "BertMaskedLM"
    written = loaded_masked_lm(tmp_path / "preset")
    assert written.next_sentence is None
    np.testing.assert_allclose(masked_lm_logits(written), masked_lm_logits(model), atol=1e-6)


def test_the_original_masked_lm_head_is_not_written_as_keras_hubs(tmp_path, caplog):
    """The original's head runs the encoder's tanh GELU with epsilon 1e-12; keras-hub's
    BertMaskedLM would run the exact GELU with 1e-5 on its weights: the preset is the
    encoder's BertBackbone, and a warning says why the head is left out."""
    import logging

    with caplog.at_level(logging.WARNING):
        convert_checkpoint(str(FIXTURES / "orig_tiny_v1000"), str(tmp_path / "preset"), "keras_hub")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(
        "the masked-LM head is not written: it runs 'gelu' with LayerNorm epsilon 1e-12" in m
        for m in warnings
    ), warnings
    assert any("the next_sentence head is not written" in m for m in warnings), warnings
    assert not (tmp_path / "preset" / "task.json").exists()
    assert not (tmp_path / "preset" / "task.weights.h5").exists()


def test_a_write_cut_short_may_be_repeated_and_leaves_no_mixed_preset(tmp_path, monkeypatch):
    """A conversion cut short (killed, or failed on a full disk) leaves a folder that the next
    conversion may replace (metadata.json marks it first), and no preset mixing the new
    backbone with an earlier preset's head and tokenizer (its config.json goes first, and the
    new one comes last)."""
    from official_bert.checkpoints import keras_hub_weights

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    # A first write killed inside atomic_output leaves its temporary name alone.
    killed = tmp_path / "killed"
    killed.mkdir()
    (killed / ".model.weights.h5.tmp-12345").write_bytes(b"partial")
    convert_checkpoint(str(PRESETS / "cased_zh"), str(killed), "keras_hub")
    assert (killed / "config.json").exists()

    for target in (tmp_path / "new", killed):  # a new folder; one holding an earlier preset
        with monkeypatch.context() as patch:
            patch.setattr(keras_hub_weights, "write_keras_hub_task_weights", full_disk)
            with pytest.raises(OSError, match="No space left"):
                convert_checkpoint(str(PRESETS / "classifier"), str(target), "keras_hub")
        assert (target / "model.weights.h5").exists()
        assert not (target / "config.json").exists(), target
        convert_checkpoint(str(PRESETS / "classifier"), str(target), "keras_hub")
        assert_classifier_matches(target)
