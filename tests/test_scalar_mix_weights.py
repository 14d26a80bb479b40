"""scalar_mix_weights.json: written from a ScalarMix, read back checked, loaded as a fixed mix."""

import json

import numpy as np
import pytest

from official_bert.layers import ScalarMix
from official_bert.scalar_mix_weights import (
    load_scalar_mix,
    read_scalar_mix_weights,
    write_scalar_mix_weights,
)


def test_write_then_load_gives_the_same_mix(tmp_path):
    source = ScalarMix(3, initial_weights=[0.4, -1.2, 2.0], initial_gamma=0.8)
    source.build()
    path = str(tmp_path / "scalar_mix_weights.json")
    written = write_scalar_mix_weights(path, source)
    assert json.loads(open(path).read()) == written
    assert written["layers"] == 3 and written["gamma"] == pytest.approx(0.8)
    np.testing.assert_allclose(written["layer_weights"], source.normalized_weights)
    assert list(tmp_path.iterdir()) == [tmp_path / "scalar_mix_weights.json"]  # no temporary

    loaded = load_scalar_mix(path, 3)
    assert loaded.trainable_weights == []
    layers = [np.random.default_rng(i).normal(size=(2, 4, 8)).astype(np.float32) for i in range(3)]
    np.testing.assert_allclose(loaded(layers), source(layers), rtol=1e-5, atol=1e-6)


def test_zero_weights_switch_layers_off(tmp_path):
    path = tmp_path / "mix.json"
    path.write_text(json.dumps({"layers": 3, "layer_weights": [0, 1, 0], "gamma": 1.5}))
    layers = [np.full((1, 2, 4), float(i + 1), np.float32) for i in range(3)]
    np.testing.assert_array_equal(load_scalar_mix(str(path), 3)(layers), 1.5 * layers[1])


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{", "not valid JSON"),
        ('{"layer_weights": [1.0]}', "expected a JSON object with 'layers', 'layer_weights'"),
        ('{"layers": 2, "layer_weights": [0.5, "x"], "gamma": 1}', "must be a list of numbers"),
        ('{"layers": 3, "layer_weights": [0.5, 0.5], "gamma": 1}', "'layers' is 3 but"),
        ('{"layers": 3, "layer_weights": [0.2, 0.3, 0.5], "gamma": 1}', "weights of 3 layers, but"),
        ('{"layers": 2, "layer_weights": [0.2, 0.3], "gamma": 1}', "sum to 1"),
        ('{"layers": 2, "layer_weights": [1.5, -0.5], "gamma": 1}', "non-negative"),
        ('{"layers": 2, "layer_weights": [0.5, 0.5], "gamma": null}', "'gamma' must be a finite"),
    ],
)
def test_bad_files_name_the_file_and_the_field(tmp_path, content, fragment):
    path = tmp_path / "mix.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="mix.json") as error:
        read_scalar_mix_weights(str(path), 2)
    assert fragment in str(error.value)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="scalar mix weights file not found"):
        read_scalar_mix_weights(str(tmp_path / "none.json"), 2)
