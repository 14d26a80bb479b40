"""The scripts (their commands, official_bert/commands/) that train or infer switch the fast kernels by their --fast_kernels flag, as the
first statement of main: the host allocator is chosen before TensorFlow makes a tensor, and the
layers before the model is built."""

import ast

import pytest
from absl import flags

from official_bert.option_flags import define_option_flags
from official_bert.tasks.feature_extraction import FeatureExtractionOptions
from official_bert.training.training_options import TrainingOptions
from tests.conftest import REPO_ROOT

SCRIPTS = [
    "run_pretraining.py",
    "run_classifier.py",
    "run_classifier_with_tfhub.py",
    "run_squad.py",
    "run_multitask.py",
    "extract_features.py",
]


@pytest.mark.parametrize("script", SCRIPTS)
def test_main_starts_by_switching_the_kernels_by_the_flag(script):
    tree = ast.parse((REPO_ROOT / "official_bert" / "commands" / script).read_text())
    main = next(
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main"
    )
    first = main.body[0]
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Call), script
    assert ast.unparse(first.value) == "use_fast_kernels(FLAGS.fast_kernels)", script


@pytest.mark.parametrize("options_class", [TrainingOptions, FeatureExtractionOptions])
def test_the_flag_defaults_to_the_fast_kernels(options_class):
    values = flags.FlagValues()
    define_option_flags(options_class, values)
    values(["script"])
    assert values.fast_kernels is True
    values(["script", "--fast_kernels=false"])
    assert values.fast_kernels is False
