"""Every notebook in notebooks/ runs on the CPU with tiny settings, and is stored without outputs.

Parameters are injected as the papermill convention has it: a cell tagged "parameters" holds the
defaults; a cell placed after it overrides them.
"""

import json
import os
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

from tests.conftest import REPO_ROOT

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))


def _execute(notebook_path: pathlib.Path, parameters: dict, workdir: pathlib.Path):
    notebook = nbformat.read(notebook_path, as_version=4)
    tagged = [i for i, c in enumerate(notebook.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{notebook_path.name}: one cell must be tagged 'parameters'"
    lines = [f"{name} = {value!r}" for name, value in parameters.items()]
    notebook.cells.insert(tagged[0] + 1, nbformat.v4.new_code_cell("\n".join(lines)))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    client = NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
        env=env,
    )
    client.execute()  # raises CellExecutionError naming the cell and its traceback
    return notebook


def _output_text(notebook) -> str:
    texts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            texts.append(output.get("text", "") or json.dumps(output.get("data", {})))
    return "\n".join(texts)


def test_notebooks_are_stored_without_outputs():
    assert len(NOTEBOOKS) == 3, NOTEBOOKS
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name


def test_finetune_notebook(tiny_checkpoint_dir, tmp_path):
    notebook = _execute(
        REPO_ROOT / "notebooks" / "finetune_glue_tpu.ipynb",
        dict(
            TASK_NAME="SST-2",
            DATA_DIR=str(REPO_ROOT / "samples" / "reviews"),
            INIT_CHECKPOINT=str(tiny_checkpoint_dir / "bert_model.ckpt"),
            OUTPUT_DIR=str(tmp_path / "output"),
            MAX_SEQ_LENGTH=32,
            NUM_TRAIN_EPOCHS=1.0,
            MAX_TRAIN_EXAMPLES=64,
            LEARNING_RATE=1e-4,
        ),
        tmp_path,
    )
    text = _output_text(notebook)
    assert "distribution: one_device" in text
    results = (tmp_path / "output" / "eval_results.txt").read_text()
    assert "eval_accuracy = " in results and "global_step = 2" in results, results
    assert text.count("predicted '") == 4, text[-2000:]


def test_pretrain_notebook(tmp_path):
    work = tmp_path / "work"
    notebook = _execute(
        REPO_ROOT / "notebooks" / "pretrain_from_scratch.ipynb",
        dict(
            CORPUS=str(REPO_ROOT / "sample_text.txt"),
            WORK_DIR=str(work),
            VOCAB_SIZE=800,
            HIDDEN_SIZE=32,
            NUM_LAYERS=1,
            MAX_SEQ_LENGTH=32,
            MAX_PREDICTIONS_PER_SEQ=5,
            DUPE_FACTOR=1,
            TRAIN_BATCH_SIZE=16,
            NUM_TRAIN_STEPS=8,
        ),
        tmp_path,
    )
    text = _output_text(notebook)
    assert "the [MASK] opens at six ... ->" in text, text[-2000:]
    for name in ("vocab.txt", "bert_config.json", "tf_examples.tfrecord"):
        assert (work / name).exists(), name
    assert (work / "pretraining" / "bert_model.ckpt.index").exists()
    assert (work / "hub" / "bert_encoder_with_mlm" / "saved_model.pb").exists()
    assert (work / "hub" / "bert_preprocessor" / "saved_model.pb").exists()


def test_tfhub_notebook(tiny_exports, tmp_path):
    pytest.importorskip("tf_keras")
    # By default the notebook exports all-MiniLM-L6-v2; here the tiny exports stand in for it.
    notebook = _execute(
        REPO_ROOT / "notebooks" / "tfhub_keras3_and_tf_keras.ipynb",
        dict(
            ENCODER_HANDLE=tiny_exports["model"],
            PREPROCESSOR_HANDLE=tiny_exports["preprocessing"],
            DATA_DIR=str(REPO_ROOT / "samples" / "reviews"),
            SEQ_LENGTH=24,
            EPOCHS=1,
            MAX_TRAIN_EXAMPLES=32,
        ),
        tmp_path,
    )
    text = _output_text(notebook)
    assert "tf_keras and Keras 3 give the same pooled_output" in text
    assert "Keras 3 dev accuracy:" in text and "tf_keras dev accuracy:" in text
    # MAX_TRAIN_EXAMPLES caps training only: the accuracy is over the whole dev split.
    assert "32 train, 120 dev examples" in text, text[:2000]
