"""Calls a serving SavedModel from a fresh Python process that imports only tensorflow and
tensorflow_text, as TF Serving (which links tensorflow_text's ops) would load it: a fork of a
warm interpreter that imported just those two (tests/warm_interpreter.py, preload "serving"),
or a new interpreter where the call sets environment variables (TensorFlow reads some, such as
TF_ENABLE_ONEDNN_OPTS, only as it starts)."""

import json
import os
import subprocess
import sys

from tests.warm_interpreter import run_script

_SERVE = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
assert not any(name.startswith("official_bert") for name in sys.modules)
inputs = {name: tf.constant(values, tf.string) for name, values in json.loads(sys.argv[1]).items()}
def decoded(value):
    if isinstance(value, list):
        return [decoded(item) for item in value]
    return value.decode() if isinstance(value, bytes) else value
for export_dir in sys.argv[2:]:
    served = tf.saved_model.load(export_dir).signatures["serving_default"]
    outputs = {name: decoded(value.numpy().tolist()) for name, value in served(**inputs).items()}
    print(json.dumps(outputs))
"""


def serve_in_fresh_process(export_dir, inputs: dict[str, list[str]]) -> dict:
    """`serving_default(**inputs)` of the SavedModel at export_dir, run in a fresh process;
    returns {output name: nested lists} (strings decoded from UTF-8; a rank-1 string output is
    a list, rank 2 a list of lists)."""
    return serve_each_in_one_fresh_process([export_dir], inputs)[0]


def serve_each_in_one_fresh_process(
    export_dirs, inputs: dict[str, list[str]], environment: dict[str, str] | None = None
) -> list[dict]:
    """serve_in_fresh_process for several SavedModels, loaded one after another by one fresh
    process; a list in export_dirs' order.
    environment: variables set for that interpreter on top of this one's."""
    argv = ["-c", _SERVE, json.dumps(inputs), *map(str, export_dirs)]
    if environment:
        result = subprocess.run(
            [sys.executable, *argv],
            capture_output=True,
            text=True,
            timeout=300,
            cwd="/",
            env={**os.environ, **environment},
        )
    else:
        result = run_script(argv, cwd="/", timeout=300, preload="serving")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()[-len(export_dirs) :]
    return [json.loads(line) for line in lines]
