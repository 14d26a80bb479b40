"""Flags made from option dataclasses: types, defaults, help and required fields, read back into
the options; every training script keeps the original release's flags and defaults."""

import dataclasses

import pytest
from absl import flags

from official_bert.option_flags import define_option_flags, flag_fields, option, options_from_flags
from official_bert.tasks.classification import ClassifierOptions
from official_bert.tasks.feature_extraction import FeatureExtractionOptions
from official_bert.tasks.pretraining import PretrainingOptions
from official_bert.tasks.squad import SquadOptions
from official_bert.training.training_options import TrainingOptions


@dataclasses.dataclass(kw_only=True)
class _ExampleOptions:
    name: str = option(help="A required string.")
    count: int = option(3, help="An integer.")
    rate: float | None = option(None, help="An optional number.")
    enabled: bool = option(True, help="A switch.")
    words: list[str] | None = option(None, help="A comma-separated list.")
    mode: str = option("a", choices=("a", "b"), help="One of two.")
    computed: int = option(0, flag=False)


def _parsed(options_class, argv, **overrides):
    flag_values = flags.FlagValues()
    define_option_flags(options_class, flag_values)
    flag_values(["program", *argv])
    return flag_values, options_from_flags(options_class, flag_values, **overrides)


def test_each_field_becomes_a_flag_of_its_type_and_default():
    flag_values, options = _parsed(
        _ExampleOptions,
        ["--name=x", "--count=7", "--rate=0.5", "--noenabled", "--words=a,b", "--mode=b"],
        computed=9,
    )
    assert options == _ExampleOptions(
        name="x", count=7, rate=0.5, enabled=False, words=["a", "b"], mode="b", computed=9
    )
    assert "computed" not in flag_values
    assert flag_values["count"].help == "An integer."
    assert flag_values["count"].default == 3
    assert [field.name for field in flag_fields(_ExampleOptions)][:2] == ["name", "count"]

    _, defaults = _parsed(_ExampleOptions, ["--name=y"])
    assert defaults == _ExampleOptions(name="y")
    with pytest.raises(flags.IllegalFlagValueError):
        _parsed(_ExampleOptions, ["--name=x", "--mode=c"])
    with pytest.raises(flags.IllegalFlagValueError):
        _parsed(_ExampleOptions, ["--name=x", "--count=many"])


def test_a_flag_needs_help():
    with pytest.raises(ValueError, match="needs a help text"):
        option(1)


def test_the_original_tpu_flags_map_onto_the_tf2_ones():
    _, options = _parsed(
        TrainingOptions,
        [
            "--output_dir=/tmp/o",
            "--use_tpu",
            "--master=grpc://10.0.0.2:8470",
            "--iterations_per_loop=50",
        ],
    )
    assert options.distribution_strategy == "tpu"
    assert options.tpu == "grpc://10.0.0.2:8470"
    assert options.steps_per_loop == 50
    _, options = _parsed(TrainingOptions, ["--output_dir=/tmp/o", "--tpu_name=my-tpu"])
    assert (options.distribution_strategy, options.tpu) == ("one_device", "my-tpu")
    _, options = _parsed(TrainingOptions, ["--output_dir=/tmp/o", "--steps_per_loop=7"])
    assert options.steps_per_loop == 7
    with pytest.raises(ValueError, match="gradient_accumulation_steps must be >= 1"):
        _parsed(TrainingOptions, ["--output_dir=/tmp/o", "--gradient_accumulation_steps=0"])


# The original google-research/bert scripts' flags and defaults.
ORIGINAL_TRAINING_FLAGS = dict(
    learning_rate=5e-5,
    save_checkpoints_steps=1000,
    iterations_per_loop=1000,
    use_tpu=False,
    tpu_name=None,
    tpu_zone=None,
    gcp_project=None,
    master=None,
    num_tpu_cores=8,
    output_dir=None,
    init_checkpoint=None,
)
ORIGINAL_FLAGS = {
    ClassifierOptions: dict(
        ORIGINAL_TRAINING_FLAGS,
        data_dir=None,
        bert_config_file=None,
        task_name=None,
        vocab_file=None,
        max_seq_length=128,
        do_train=False,
        do_eval=False,
        do_predict=False,
        train_batch_size=32,
        eval_batch_size=8,
        predict_batch_size=8,
        num_train_epochs=3.0,
        warmup_proportion=0.1,
        preserve_unused_tokens=False,
    ),
    SquadOptions: dict(
        ORIGINAL_TRAINING_FLAGS,
        bert_config_file=None,
        vocab_file=None,
        train_file=None,
        predict_file=None,
        max_seq_length=384,
        doc_stride=128,
        max_query_length=64,
        do_train=False,
        do_predict=False,
        train_batch_size=32,
        predict_batch_size=8,
        num_train_epochs=3.0,
        warmup_proportion=0.1,
        n_best_size=20,
        max_answer_length=30,
        verbose_logging=False,
        version_2_with_negative=False,
        null_score_diff_threshold=0.0,
        preserve_unused_tokens=False,
    ),
    PretrainingOptions: dict(
        ORIGINAL_TRAINING_FLAGS,
        bert_config_file=None,
        input_file=None,
        max_seq_length=128,
        max_predictions_per_seq=20,
        do_train=False,
        do_eval=False,
        train_batch_size=32,
        eval_batch_size=8,
        num_train_steps=100000,
        num_warmup_steps=10000,
        max_eval_steps=100,
    ),
}


@pytest.mark.parametrize("options_class", list(ORIGINAL_FLAGS), ids=lambda c: c.__name__)
def test_the_scripts_keep_the_original_flags_and_defaults(options_class):
    flag_values = flags.FlagValues()
    define_option_flags(options_class, flag_values)
    for name, default in ORIGINAL_FLAGS[options_class].items():
        assert name in flag_values, name
        assert flag_values[name].default == default, name
    if options_class is not PretrainingOptions:
        # True unless an exported encoder says otherwise (resolved when the options are made).
        assert "do_lower_case" in flag_values


@pytest.mark.parametrize(
    "options_class",
    [ClassifierOptions, SquadOptions, FeatureExtractionOptions],
    ids=lambda c: c.__name__,
)
def test_preserve_unused_tokens_is_the_originals_flag(options_class):
    # bert-tensorflow 1.0.4's tokenization.py defines it (default False) for every script.
    flag_values = flags.FlagValues()
    define_option_flags(options_class, flag_values)
    flag = flag_values["preserve_unused_tokens"]
    assert flag.default is False
    assert flag.help == (
        "If True, Wordpiece tokenization will not be applied to words in the vocab."
    )
    flag_values(["program", "--preserve_unused_tokens=true"])
    assert flag_values.preserve_unused_tokens is True
