"""--hub_module_handle beyond run_classifier.py: run_squad.py and run_multitask.py fine-tune an
exported encoder end to end (its config, vocab and casing are the flags' defaults)."""

import json

import pytest
import tensorflow as tf

from official_bert.checkpoints.loading import read_bert_config
from official_bert.export.exported_bert_encoder import read_exported_encoder_settings
from official_bert.tasks.multitask import MultiTaskOptions, run_multitask
from official_bert.tasks.squad import SquadOptions, run_squad
from tests.conftest import REPO_ROOT
from tests.export.module_weights import assert_module_weights_moved
from tests.tiny_data import write_tiny_task
from tests.warm_interpreter import run_script

# Questions over two contexts in the tiny vocabulary (tests/tiny_data.py's words).
_CONTEXTS = {
    "the quick brown fox jump over the lazy dog .": [
        ("what did the fox jump over ?", "the lazy dog"),
        ("what was quick ?", "brown fox"),
    ],
    "the movie was really good but the plot was dull .": [
        ("what was good ?", "the movie"),
        ("what was dull ?", "the plot"),
    ],
}


def _write_squad(path):
    paragraphs = []
    for context, questions in _CONTEXTS.items():
        qas = [
            {
                "id": f"q{len(paragraphs)}{index}",
                "question": question,
                "answers": [{"text": answer, "answer_start": context.index(answer)}],
            }
            for index, (question, answer) in enumerate(questions)
        ]
        paragraphs.append({"context": context, "qas": qas})
    path.write_text(
        json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]})
    )


def test_run_squad_fine_tunes_an_exported_encoder(tiny_exports, tmp_path):
    squad_file = tmp_path / "tiny-squad.json"
    _write_squad(squad_file)
    output_dir = tmp_path / "out"
    handle = tiny_exports["model"]
    # No --bert_config_file, --vocab_file, --do_lower_case: they come from the module.
    ran = run_script(
        [
            str(REPO_ROOT / "run_squad.py"),
            f"--hub_module_handle={handle}",
            f"--train_file={squad_file}",
            f"--predict_file={squad_file}",
            f"--output_dir={output_dir}",
            "--do_train=true",
            "--do_predict=true",
            "--max_seq_length=32",
            "--doc_stride=16",
            "--max_query_length=12",
            "--train_batch_size=4",
            "--learning_rate=3e-3",
            "--num_train_epochs=30",
            "--steps_per_loop=10",
            "--seed=1",
            # The loss without the padding positions: 30 steps teach the tiny model all four.
            "--trim_padding=true",
        ],
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    assert f"Initialized from the exported encoder {handle}" in ran.stderr
    # The tiny model learns these four answers by heart.
    scores = json.loads((output_dir / "eval_results.json").read_text())
    assert scores["exact_match"] >= 75.0, scores
    predictions = json.loads((output_dir / "predictions.json").read_text())
    assert sorted(predictions) == ["q00", "q01", "q10", "q11"]
    # A span head reads the sequence output: the pooler gets no gradient.
    assert_module_weights_moved(output_dir, handle, unused=("pooler",))


def test_run_multitask_fine_tunes_an_exported_encoder(tiny_exports, tmp_path):
    write_tiny_task(tmp_path / "CoLA", "cola", seed=0, counts=(48, 32))
    write_tiny_task(tmp_path / "STS-B", "sts-b", seed=1, counts=(32, 32))
    handle = tiny_exports["model"]
    settings = read_exported_encoder_settings(handle)
    output_dir = tmp_path / "out"
    results = run_multitask(
        MultiTaskOptions(
            bert_config=read_bert_config(settings["bert_config_file"]),
            vocab_file=settings["vocab_file"],
            output_dir=str(output_dir),
            hub_module_handle=handle,
            task_names=["cola", "sts-b"],
            data_dirs=[str(tmp_path / "CoLA"), str(tmp_path / "STS-B")],
            max_seq_length=16,
            do_train=True,
            do_eval=True,
            train_batch_size=8,
            learning_rate=1e-3,
            num_train_steps=10,
            steps_per_loop=5,
            seed=2,
        )
    )
    assert [step for step, _ in results["history"]] == [5, 10]
    assert set(results["eval"]) == {"cola", "sts-b"}
    assert_module_weights_moved(output_dir, handle)
    # Each head in the original layout; the encoder is an exported module, kept in ckpt-10.
    for task in ("cola", "sts-b"):
        assert tf.train.list_variables(str(output_dir / task / "classifier_head.ckpt"))
    assert not (output_dir / "bert_model.ckpt.index").exists()


def test_a_module_and_an_init_checkpoint_together_are_refused(tiny_exports, tmp_path):
    settings = read_exported_encoder_settings(tiny_exports["model"])
    squad_file = tmp_path / "tiny-squad.json"
    _write_squad(squad_file)
    with pytest.raises(ValueError, match="Give either `hub_module_handle`"):
        run_squad(
            SquadOptions(
                bert_config=read_bert_config(settings["bert_config_file"]),
                vocab_file=settings["vocab_file"],
                output_dir=str(tmp_path / "out"),
                train_file=str(squad_file),
                do_train=True,
                max_seq_length=32,
                max_query_length=12,
                hub_module_handle=tiny_exports["model"],
                init_checkpoint=settings["bert_config_file"],
            )
        )
    assert not (tmp_path / "out").exists()
