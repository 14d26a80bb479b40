"""The exported encoder (TF Hub BERT encoder API): outputs, weights, dropout, shapes, serving,
and that nothing of the machine it was made on leaks into it."""

import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import random_inputs
from tests.warm_interpreter import run_script

# TensorFlow's console script, installed beside the interpreter (a virtual environment's bin/ is
# not necessarily on PATH when its python runs the tests).
SAVED_MODEL_CLI = str(pathlib.Path(sys.executable).parent / "saved_model_cli")


def _load(path):
    return tf.saved_model.load(str(path))


def test_outputs_equal_the_source_model_and_weights_equal_the_checkpoint(
    tiny_exports, tiny_source_pretrainer, tiny_checkpoint_dir
):
    exported = _load(tiny_exports["model"])
    inputs = random_inputs(batch=3, seq=16)
    outputs = exported(inputs, training=False)
    reference = tiny_source_pretrainer.encoder(inputs, training=False)
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(outputs[name], reference[name], atol=1e-6, rtol=0)
    np.testing.assert_array_equal(outputs["default"], outputs["pooled_output"])
    assert len(outputs["encoder_outputs"]) == 2  # num_hidden_layers
    for got, expected in zip(outputs["encoder_outputs"], reference["encoder_outputs"], strict=True):
        np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)

    # The non-trainable variables are the dropout layers' seed states, not weights.
    source_variables = tiny_source_pretrainer.encoder.trainable_variables
    assert len(exported.trainable_variables) == len(source_variables)
    for got, expected in zip(exported.trainable_variables, source_variables, strict=True):
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    checkpoint = tf.train.load_checkpoint(str(tiny_checkpoint_dir / "bert_model.ckpt"))
    word_embeddings = [v for v in exported.variables if "word_embeddings" in v.name]
    assert len(word_embeddings) == 1
    np.testing.assert_array_equal(
        word_embeddings[0].numpy(), checkpoint.get_tensor("bert/embeddings/word_embeddings")
    )
    assert exported.regularization_losses == []
    assert 0 < len(exported.trainable_variables) <= len(exported.variables)
    assert bool(exported.do_lower_case.numpy()) is True  # guessed: the vocab has no capitals
    vocab = tf.io.read_file(exported.vocab_file.asset_path).numpy()
    assert vocab == (tiny_checkpoint_dir / "vocab.txt").read_bytes()


def test_training_switches_dropout(tiny_exports):
    exported = _load(tiny_exports["model"])
    inputs = random_inputs(batch=2, seq=16)
    first = exported(inputs, training=False)["sequence_output"].numpy()
    second = exported(inputs, training=False)["sequence_output"].numpy()
    np.testing.assert_array_equal(first, second)
    dropped_1 = exported(inputs, training=True)["sequence_output"].numpy()
    dropped_2 = exported(inputs, training=True)["sequence_output"].numpy()
    assert np.abs(dropped_1 - first).max() > 1e-3
    assert np.abs(dropped_1 - dropped_2).max() > 1e-3


def test_static_shapes_propagate_on_symbolic_inputs(tiny_exports):
    exported = _load(tiny_exports["model"])
    shapes = {}

    @tf.function(
        input_signature=[
            {
                name: tf.TensorSpec([5, 12], tf.int32)
                for name in ("input_word_ids", "input_mask", "input_type_ids")
            }
        ]
    )
    def call(inputs):
        outputs = exported(inputs, training=False)
        shapes["sequence"] = outputs["sequence_output"].shape.as_list()
        shapes["pooled"] = outputs["pooled_output"].shape.as_list()
        shapes["layers"] = [output.shape.as_list() for output in outputs["encoder_outputs"]]
        return outputs["pooled_output"]

    call.get_concrete_function()
    assert shapes == {"sequence": [5, 12, 32], "pooled": [5, 32], "layers": [[5, 12, 32]] * 2}


def test_mlm_logits_equal_the_source_pretrainer(tiny_exports, tiny_source_pretrainer):
    exported = _load(tiny_exports["model_with_mlm"])
    inputs = random_inputs(batch=3, seq=16)
    inputs["masked_lm_positions"] = np.array([[1, 2, 3], [0, 5, 7], [4, 4, 9]], np.int32)
    outputs = exported.mlm(inputs, training=False)
    reference = tiny_source_pretrainer(inputs, training=False)
    assert outputs["mlm_logits"].shape == (3, 3, 100)
    np.testing.assert_allclose(outputs["mlm_logits"], reference["mlm_logits"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(
        outputs["pooled_output"], reference["pooled_output"], atol=1e-6, rtol=0
    )
    # The MLM head's variables come with it; the root is the encoder alone, as in "model".
    assert len(exported.mlm.variables) > len(exported.variables)
    assert len(exported.variables) == len(_load(tiny_exports["model"]).variables)


def test_saved_model_cli_shows_and_runs_serving_default(tiny_exports, tmp_path):
    path = str(tiny_exports["model"])
    shown = subprocess.run(
        [
            SAVED_MODEL_CLI,
            "show",
            "--dir",
            path,
            "--tag_set",
            "serve",
            "--signature_def",
            "serving_default",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in (
        "input_word_ids",
        "input_mask",
        "input_type_ids",
        "pooled_output",
        "sequence_output",
        "encoder_outputs_0",
        "encoder_outputs_1",
    ):
        assert f"['{name}']" in shown
    inputs = {
        "input_word_ids": np.array([[2, 5, 6, 3]], np.int32),
        "input_mask": np.ones((1, 4), np.int32),
        "input_type_ids": np.zeros((1, 4), np.int32),
    }
    for name, value in inputs.items():
        np.save(tmp_path / f"{name}.npy", value)
    # The same tool in a warm interpreter (`show` above ran its installed command).
    ran = run_script(
        [
            "-m",
            "tensorflow.python.tools.saved_model_cli",
            "run",
            "--dir",
            path,
            "--tag_set",
            "serve",
            "--signature_def",
            "serving_default",
            "--outdir",
            str(tmp_path / "cli"),
            "--inputs",
            ";".join(f"{name}={tmp_path / name}.npy" for name in inputs),
        ],
        preload="serving",
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    pooled = np.load(tmp_path / "cli" / "pooled_output.npy")
    expected = _load(path)(inputs, training=False)["pooled_output"]
    np.testing.assert_allclose(pooled, expected, atol=1e-6, rtol=0)


def test_nothing_leaks_the_export_moves_and_re_exports(tiny_checkpoint_dir, tmp_path):
    from official_bert.export import export_tfhub

    # A vocab of its own in a directory that is deleted after the export.
    source = tmp_path / "source_files_7f3a"
    source.mkdir()
    shutil.copy(tiny_checkpoint_dir / "vocab.txt", source / "vocab.txt")
    export_path = export_tfhub(
        "model",
        str(tmp_path / "exported"),
        str(source / "vocab.txt"),
        model_checkpoint_path=str(tiny_checkpoint_dir / "bert_model.ckpt"),
    )
    saved_model_pb = (tmp_path / "exported" / "saved_model.pb").read_bytes()
    assert str(source).encode() not in saved_model_pb
    assert str(tiny_checkpoint_dir).encode() not in saved_model_pb
    assert b"source_files_7f3a" not in saved_model_pb
    inputs = random_inputs(batch=2, seq=8)
    expected = _load(export_path)(inputs, training=False)["pooled_output"].numpy()

    shutil.rmtree(source)
    moved = tmp_path / "moved" / "encoder"
    moved.parent.mkdir()
    shutil.move(export_path, moved)
    loaded = _load(moved)
    np.testing.assert_array_equal(loaded(inputs, training=False)["pooled_output"], expected)
    assert tf.io.read_file(loaded.vocab_file.asset_path).numpy().startswith(b"[PAD]\n")

    tf.saved_model.save(loaded, str(tmp_path / "again"))
    again = _load(tmp_path / "again")
    np.testing.assert_array_equal(again(inputs, training=False)["pooled_output"], expected)
    assert len(again.trainable_variables) == len(loaded.trainable_variables)
    assert tf.io.read_file(again.vocab_file.asset_path).numpy().startswith(b"[PAD]\n")


def test_a_checkpoint_of_the_loaded_module_keeps_fine_tuned_weights(tiny_exports, tmp_path):
    # What a fine-tuning run saves and resumes: the variables the module computes with.
    tuned = _load(tiny_exports["model"])
    for variable in tuned.trainable_variables:
        variable.assign(variable * 0.5 + 0.01)
    inputs = random_inputs(batch=2, seq=16)
    expected = tuned(inputs, training=False)["pooled_output"].numpy()
    path = tf.train.Checkpoint(module=tuned).write(str(tmp_path / "ckpt"))
    # No second, stale copy of the weights rides along (the variable lists plus do_lower_case).
    values = [name for name, _ in tf.train.list_variables(path) if "VARIABLE_VALUE" in name]
    assert len(values) == len(tuned.variables) + 1
    fresh = _load(tiny_exports["model"])
    assert np.abs(fresh(inputs, training=False)["pooled_output"] - expected).max() > 1e-3
    tf.train.Checkpoint(module=fresh).read(path).assert_consumed()
    np.testing.assert_array_equal(fresh(inputs, training=False)["pooled_output"], expected)


def _functions_reached_by_signatures(path):
    """(names of the functions the serving signatures call, directly or nested, the library)."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved_model = saved_model_pb2.SavedModel()
    with open(f"{path}/saved_model.pb", "rb") as f:
        saved_model.ParseFromString(f.read())
    graph = saved_model.meta_graphs[0].graph_def
    library = {function.signature.name: function for function in graph.library.function}

    def called(nodes):
        for node in nodes:
            for value in node.attr.values():
                if value.func.name:
                    yield value.func.name
                yield from (function.name for function in value.list.func)

    reached, pending = set(), list(called(graph.node))
    while pending:
        name = pending.pop()
        if name in reached or name not in library:
            continue
        reached.add(name)
        pending.extend(called(library[name].node_def))
    return reached, library


@pytest.fixture(scope="module")
def fast_kernels_export(tiny_checkpoint_dir, tmp_path_factory):
    """The encoder + MLM module exported with the fast kernels on (XLA-compiled GELU gradient)."""
    from official_bert.export import export_tfhub
    from official_bert.kernels import fast_kernels

    with fast_kernels(True):
        return export_tfhub(
            "model_with_mlm",
            str(tmp_path_factory.mktemp("fast_kernels_export") / "model_with_mlm"),
            str(tiny_checkpoint_dir / "vocab.txt"),
            model_checkpoint_path=str(tiny_checkpoint_dir / "bert_model.ckpt"),
            default_seq_length=16,
        )


def test_serving_signatures_need_no_xla(tiny_exports, fast_kernels_export):
    # With the fast kernels the GELU's gradient is XLA-compiled (training only); what serving
    # runs must not be, as TF Serving ships with XLA:CPU compilation off.
    exports = {**tiny_exports, "fast_kernels": fast_kernels_export}
    for export_type in ("model", "model_with_mlm", "fast_kernels"):
        reached, library = _functions_reached_by_signatures(exports[export_type])
        assert reached, export_type
        compiled = [name for name in library if library[name].attr["_XlaMustCompile"].b]
        # Plain exports compile nothing; the fast one saves the GELU's gradient (fine-tuning the
        # module uses it) but never serves it.
        saved_gradient = any("gelu_tanh_gradient" in name for name in compiled)
        assert saved_gradient == (export_type == "fast_kernels"), export_type
        assert not set(compiled) & reached, (export_type, set(compiled) & reached)


def _record_calls(monkeypatch, owner, name) -> list[bool]:
    """Replaces the method `owner.name` by one that records, per call, whether it ran eagerly
    (False: a trace); returns that record."""
    calls, real_method = [], getattr(owner, name)

    def recorded(self, *args, **kwargs):
        calls.append(tf.executing_eagerly())
        return real_method(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, recorded)
    return calls


def test_saving_reuses_the_traces_made_for_it(tmp_path, monkeypatch):
    """The module's functions are traced once each: call and mlm, with training False and True;
    tf.saved_model.save finds those traces (made in its save context) instead of tracing again.
    The preprocessor's bert_pack_inputs traces are likewise its only ones."""
    from official_bert.config import BertConfig
    from official_bert.data.bert_input_packer import BertInputPacker
    from official_bert.export.bert_encoder_module import export_bert_encoder
    from official_bert.export.bert_preprocessor_module import export_bert_preprocessor
    from official_bert.models import BertEncoder, BertPretrainer
    from tests.conftest import tiny_encoder_kwargs

    config = BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64,
    )  # fmt: skip
    pretrainer = BertPretrainer(BertEncoder(**tiny_encoder_kwargs()))
    pretrainer.build()
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"{t}\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]))

    traced = _record_calls(monkeypatch, BertEncoder, "call")
    export_bert_encoder(
        pretrainer.encoder, str(tmp_path / "m"), str(vocab), True, config, pretrainer=pretrainer
    )
    assert traced == [False] * 4

    packed = _record_calls(monkeypatch, BertInputPacker, "pack_ids")
    export_bert_preprocessor(str(tmp_path / "p"), str(vocab), True, 16)
    # bert_pack_inputs: one or two segments of words or of pieces; the default call: one more.
    assert packed == [False] * 5


def test_a_model_with_mlm_export_converts_to_safetensors_with_its_pooler(tiny_exports, tmp_path):
    # Its transformers class (BertForMaskedLM) has no pooler, but the module's pooled_output
    # is a trained one: BertModel reads it from the file (it was left out, and BertModel's
    # pooled_output came from a random pooler).
    from safetensors.numpy import load_file

    from official_bert.checkpoints.conversion import convert_checkpoint

    written = convert_checkpoint(
        str(tiny_exports["model_with_mlm"]), str(tmp_path / "st"), output_format="safetensors"
    )
    tensors = load_file(written)
    exported = _load(tiny_exports["model_with_mlm"])
    (kernel,) = [v for v in exported.variables if "pooler" in v.name and "kernel" in v.name]
    np.testing.assert_array_equal(tensors["bert.pooler.dense.weight"], kernel.numpy().T)
