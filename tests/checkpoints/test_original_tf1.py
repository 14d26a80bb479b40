"""Parity with the original google-research/bert code, through its own checkpoint layout."""

import shutil

import numpy as np
import pytest
import tensorflow as tf

from official_bert.checkpoints import load_bert_weights
from official_bert.checkpoints.original_tf1 import (
    folder_checkpoint_prefix,
    read_checkpoint_arrays,
    read_original_checkpoint,
    write_original_checkpoint,
)
from official_bert.checkpoints.variable_table import CheckpointMismatchError
from official_bert.config import BertConfig
from official_bert.models import BertClassifier, BertEncoder, BertPretrainer


def _pretrainer(config):
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    model.build()
    return model


@pytest.fixture(scope="module")
def original(original_tiny_dir):
    config = BertConfig.from_json_file(str(original_tiny_dir / "bert_config.json"))
    model = _pretrainer(config)
    read_original_checkpoint(str(original_tiny_dir / "bert_model.ckpt"), model, require_heads=True)
    return config, model, dict(np.load(original_tiny_dir / "outputs.npz"))


def test_every_output_matches_the_original_modeling_py(original):
    # Reference: outputs.npz, computed by the original modeling.py + run_pretraining.py heads.
    _, model, reference = original
    inputs = {
        "input_word_ids": reference["input_ids"],
        "input_mask": reference["input_mask"],
        "input_type_ids": reference["token_type_ids"],
        "masked_lm_positions": reference["masked_lm_positions"],
    }
    outputs = model(inputs, training=False)
    tolerance = dict(atol=1e-5, rtol=0)
    np.testing.assert_allclose(
        outputs["embedding_output"], reference["embedding_output"], **tolerance
    )
    layers = np.stack([np.asarray(x) for x in outputs["encoder_outputs"]])
    assert layers.shape == reference["all_encoder_layers"].shape
    np.testing.assert_allclose(layers, reference["all_encoder_layers"], **tolerance)
    np.testing.assert_allclose(
        outputs["sequence_output"], reference["sequence_output"], **tolerance
    )
    np.testing.assert_allclose(outputs["pooled_output"], reference["pooled_output"], **tolerance)
    np.testing.assert_allclose(
        tf.nn.log_softmax(outputs["mlm_logits"]), reference["mlm_log_probs"], **tolerance
    )
    np.testing.assert_allclose(
        tf.nn.log_softmax(outputs["next_sentence_logits"]), reference["nsp_log_probs"], **tolerance
    )


def test_written_checkpoint_has_the_original_names_shapes_and_values(
    original, original_tiny_dir, tmp_path
):
    _, model, _ = original
    prefix = write_original_checkpoint(model, str(tmp_path / "out" / "bert_model.ckpt"))
    ours = read_checkpoint_arrays(prefix)
    theirs = read_checkpoint_arrays(str(original_tiny_dir / "bert_model.ckpt"))
    assert set(ours) == set(theirs)
    for name, value in theirs.items():
        assert ours[name].dtype == np.float32
        np.testing.assert_array_equal(ours[name], value, err_msg=name)
    assert (
        (tmp_path / "out" / "checkpoint")
        .read_text()
        .startswith('model_checkpoint_path: "bert_model.ckpt"')
    )
    assert not [p for p in (tmp_path / "out").iterdir() if "tmp" in p.name]


def test_original_tf1_init_from_checkpoint_reads_what_we_write(original, tmp_path):
    # The original code loads weights with tf.train.init_from_checkpoint in a TF1 graph: do
    # exactly that with our file.
    _, model, _ = original
    prefix = write_original_checkpoint(model, str(tmp_path / "bert_model.ckpt"))
    kernel_name = "bert/encoder/layer_1/attention/self/query/kernel"
    graph = tf.Graph()
    with graph.as_default():
        with tf.compat.v1.variable_scope("bert/encoder/layer_1/attention/self/query"):
            kernel = tf.compat.v1.get_variable("kernel", shape=[64, 64])
        tf.compat.v1.train.init_from_checkpoint(prefix, {"bert/": "bert/"})
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            value = session.run(kernel)
    expected = (
        model.encoder.transformer_layers[1].attention.query_dense.kernel.numpy().reshape(64, 64)
    )
    np.testing.assert_array_equal(value, expected)
    assert kernel_name in read_checkpoint_arrays(prefix)


def _save(path, tensors):
    tf.raw_ops.SaveV2(
        prefix=str(path),
        tensor_names=list(tensors),
        shape_and_slices=[""] * len(tensors),
        tensors=[tf.constant(v) for v in tensors.values()],
    )
    return str(path)


def test_optimizer_slots_and_global_step_are_ignored(original_tiny_dir, tmp_path):
    arrays = read_checkpoint_arrays(str(original_tiny_dir / "bert_model.ckpt"))
    for name in list(arrays):
        arrays[name + "/adam_m"] = np.zeros_like(arrays[name])
        arrays[name + "/adam_v"] = np.zeros_like(arrays[name])
    arrays["global_step"] = np.array(100, np.int64)
    path = _save(tmp_path / "trained.ckpt", arrays)
    config = BertConfig.from_json_file(str(original_tiny_dir / "bert_config.json"))
    loaded = read_original_checkpoint(path, _pretrainer(config), require_heads=True)
    assert len(loaded) == 2 * 16 + 5 + 2 + 5 + 2


def test_encoder_from_pretraining_checkpoint_and_fresh_classifier_head(original, original_tiny_dir):
    config, pretrainer, _ = original
    classifier = BertClassifier(BertEncoder.from_bert_config(config), num_classes=3)
    classifier.build()
    head_before = classifier.classifier.dense.kernel.numpy().copy()
    read_original_checkpoint(str(original_tiny_dir / "bert_model.ckpt"), classifier)
    np.testing.assert_array_equal(classifier.classifier.dense.kernel.numpy(), head_before)
    for a, b in zip(classifier.encoder.weights, pretrainer.encoder.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(
        CheckpointMismatchError, match="missing from the checkpoint:\n  output_weights"
    ):
        read_original_checkpoint(
            str(original_tiny_dir / "bert_model.ckpt"), classifier, require_heads=True
        )


def test_mismatches_are_listed(original_tiny_dir, tmp_path):
    path = str(original_tiny_dir / "bert_model.ckpt")
    wider = BertEncoder(
        vocab_size=1000,
        hidden_size=64,
        num_layers=3,
        num_attention_heads=2,
        intermediate_size=128,
        type_vocab_size=2,
    )
    wider.build()
    with pytest.raises(CheckpointMismatchError) as error:
        read_original_checkpoint(path, wider)
    message = str(error.value)
    # First, in config terms, what differs (the list alone never said which field was wrong);
    # max_position_embeddings 512 is the model's too, so it is not among the differences.
    assert message.splitlines()[0] == (
        f"original checkpoint {path} does not fit BertEncoder: the checkpoint's shapes say "
        "num_hidden_layers 2, intermediate_size 256 (vocab_size 1000, hidden_size 64, "
        "max_position_embeddings 512, type_vocab_size 2), but the model's config says "
        "num_hidden_layers 3, intermediate_size 128:"
    )
    assert "bert/encoder/layer_2/attention/self/query/kernel [64, 64]" in message
    assert (
        "bert/encoder/layer_0/intermediate/dense/kernel: checkpoint [64, 256], "
        "model expects [64, 128]"
    ) in message
    arrays = read_checkpoint_arrays(path)
    arrays["bert/encoder/layer_0/attention/self/extra"] = np.zeros([3], np.float32)
    config = BertConfig.from_json_file(str(original_tiny_dir / "bert_config.json"))
    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    with pytest.raises(
        CheckpointMismatchError,
        match=r"fit BertEncoder:\nnot used by the model:\n  bert/encoder/layer_0/attention/self/extra \[3\]",
    ):  # no config field differs: no summary
        read_original_checkpoint(_save(tmp_path / "extra.ckpt", arrays), encoder)


def test_missing_checkpoint_is_a_clear_error(tmp_path, tiny_encoder):
    with pytest.raises(FileNotFoundError, match="expected .*nothing.ckpt.index"):
        read_original_checkpoint(str(tmp_path / "nothing.ckpt"), tiny_encoder)
    with pytest.raises(FileNotFoundError, match="no checkpoint found in directory"):
        read_original_checkpoint(str(tmp_path), tiny_encoder)


def test_a_folder_without_a_state_file_reads_its_only_checkpoint(original_tiny_dir, tmp_path):
    """The original release's zips hold bert_model.ckpt.* without a `checkpoint` file: the
    unzipped folder is a checkpoint by itself (config and vocab beside it)."""
    folder = tmp_path / "uncased_L-2_H-64_A-2"
    folder.mkdir()
    for name in ("bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001"):
        shutil.copy(original_tiny_dir / name, folder / name)
    config = BertConfig.from_json_file(str(original_tiny_dir / "bert_config.json"))
    from_folder, from_prefix = (BertEncoder.from_bert_config(config) for _ in range(2))
    for encoder in (from_folder, from_prefix):
        encoder.build()
    assert load_bert_weights(from_folder, str(folder)) == "tf1"
    load_bert_weights(from_prefix, str(original_tiny_dir / "bert_model.ckpt"))
    for mine, theirs in zip(from_folder.weights, from_prefix.weights, strict=True):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    # A writer's temporary name beside it is not a second checkpoint.
    (folder / ".bert_model.ckpt.tmp-1.index").write_bytes(b"")
    assert load_bert_weights(from_folder, str(folder)) == "tf1"
    # Two checkpoints and no state file to choose: the error names both and a prefix to pass.
    shutil.copy(folder / "bert_model.ckpt.index", folder / "model.ckpt-1000.index")
    with pytest.raises(FileNotFoundError, match="several checkpoints") as error:
        load_bert_weights(from_folder, str(folder))
    assert "bert_model.ckpt.index, model.ckpt-1000.index" in str(error.value)
    assert f"e.g. {folder / 'bert_model.ckpt'}" in str(error.value)


def test_a_moved_folder_reads_the_checkpoint_its_state_file_names(original_tiny_dir, tmp_path):
    """The original's Estimator wrote absolute paths (gs://bucket/run/model.ckpt-5) into the
    `checkpoint` state file; copied elsewhere, the folder's checkpoint of that name is meant."""
    folder = tmp_path / "mrpc_output"
    folder.mkdir()
    config = BertConfig.from_json_file(str(original_tiny_dir / "bert_config.json"))
    source, changed = (BertEncoder.from_bert_config(config) for _ in range(2))
    for encoder in (source, changed):
        encoder.build()
    load_bert_weights(source, str(original_tiny_dir / "bert_model.ckpt"))
    load_bert_weights(changed, str(original_tiny_dir / "bert_model.ckpt"))
    changed.token_embedding.embeddings.assign(changed.token_embedding.embeddings + 1.0)
    write_original_checkpoint(source, str(folder / "model.ckpt-3"))
    write_original_checkpoint(changed, str(folder / "model.ckpt-5"))
    (folder / "checkpoint").write_text(
        'model_checkpoint_path: "gs://bucket/mrpc_output/model.ckpt-5"\n'
        'all_model_checkpoint_paths: "gs://bucket/mrpc_output/model.ckpt-3"\n'
        'all_model_checkpoint_paths: "gs://bucket/mrpc_output/model.ckpt-5"\n'
    )
    assert folder_checkpoint_prefix(str(folder)) == str(folder / "model.ckpt-5")
    reader = BertEncoder.from_bert_config(config)
    reader.build()
    load_bert_weights(reader, str(folder))
    np.testing.assert_array_equal(
        reader.token_embedding.embeddings.numpy(), changed.token_embedding.embeddings.numpy()
    )
    # A state file naming a checkpoint that is in neither place says so.
    (folder / "checkpoint").write_text('model_checkpoint_path: "/elsewhere/model.ckpt-9"\n')
    with pytest.raises(FileNotFoundError, match=r"naming /elsewhere/model.ckpt-9, which is"):
        load_bert_weights(reader, str(folder))
