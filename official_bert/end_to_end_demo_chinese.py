"""The Chinese end-to-end demo (`python run_demo.py --lang=zh`): the stages of the English demo on
the Chinese samples that ship in samples/zh/, each a top-level script run with its flags
(printed, so they can be copied):

1. a tiny `bert_config.json` for samples/zh/vocab.txt (one token per character of the samples);
2. `create_pretraining_data.py --word_segmenter=jieba`: masked-LM + next-sentence TFRecords from
   samples/zh/pretraining_corpus.txt, whole jieba words masked together;
3. `run_pretraining.py`: pre-train the tiny model from scratch, write `bert_model.ckpt`;
4. `run_classifier.py --task_name=generic`: review sentiment on samples/zh/classification
   (ChnSentiCorp's `label<TAB>text_a` layout), exporting the raw-text serving SavedModel;
5. `run_classifier.py --task_name=chinese_ner`: named entities on samples/zh/ner (MSRA's one
   character per line layout), entity F1 as conlleval;
6. predictions for raw Chinese sentences from the serving SavedModel of stage 4.

There are no pre-trained Chinese weights offline, so both fine-tunings start from stage 3's
model. Not part of `make demo`; `quick=True` (the test suite's mode) runs fewer steps.
"""

from __future__ import annotations

import json
import os
import time

from official_bert.end_to_end_demo import (
    DemoSettings,
    DemoStages,
    predict_sentences,
    read_key_values,
    run_pretraining_stages,
    run_script,
    write_demo_config,
)

CHINESE_DEMO_SENTENCES = (
    "房间干净又安静，服务非常周到，下次还会再来。",
    "等了很久才送到，盒子也破了，再也不会买了。",
    "价格实惠，做工精细，推荐给大家。",
    "老板爱理不理，味道也让人失望。",
)
SENTIMENT_NAMES = {"1": "正面", "0": "负面"}


def run_chinese_demo(output_dir: str, scripts_dir: str, settings: DemoSettings) -> dict:
    """Runs the six stages into `output_dir`; returns a summary (also
    output_dir/demo_summary.json).

    Args:
      output_dir: a fresh or previous demo folder (stages that find finished outputs reuse them,
        as the scripts do).
      scripts_dir: the folder of the top-level scripts and of `samples/zh/`.
      settings: the sizes of the runs, `DemoSettings.chinese()` in run_demo.py (vocab_size is
        unused: the samples' vocab is fixed).

    Returns:
      {"pretraining_instances", "pretraining_eval", "classifier_eval", "ner_eval": the
      eval_results.txt values as floats, "predictions": [{"sentence", "label", "p"}], "paths",
      "stage_seconds", "total_seconds"}.
    """
    samples = os.path.join(scripts_dir, "samples", "zh")
    corpus = os.path.join(samples, "pretraining_corpus.txt")
    vocab_file = os.path.join(samples, "vocab.txt")
    paths = {
        "bert_config": os.path.join(output_dir, "bert_config.json"),
        "pretraining_data": os.path.join(output_dir, "pretraining_data", "tf_examples.tfrecord"),
        "pretraining": os.path.join(output_dir, "pretraining"),
        "classifier": os.path.join(output_dir, "classifier"),
        "ner": os.path.join(output_dir, "ner"),
    }
    stage_folders = ("pretraining_data", "pretraining", "classifier", "ner")
    settings.start(output_dir, [os.path.join(output_dir, name) for name in stage_folders])
    stages = DemoStages(total=6)
    started_all = time.time()

    started = stages.start(f"a tiny bert_config.json for {vocab_file}")
    with open(vocab_file, encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    heads = write_demo_config(paths["bert_config"], vocab_size, settings).num_attention_heads
    stages.done(
        "config",
        started,
        f"{paths['bert_config']} ({vocab_size} tokens, L{settings.num_layers} "
        f"H{settings.hidden_size} A{heads})",
    )

    data_summary, pretraining_eval, checkpoint = run_pretraining_stages(
        stages,
        scripts_dir,
        settings,
        corpus,
        vocab_file,
        paths,
        "create_pretraining_data.py: whole-word masking with jieba",
        word_segmenter="jieba",
    )

    model_flags = dict(
        init_checkpoint=checkpoint,
        bert_config_file=paths["bert_config"],
        vocab_file=vocab_file,
        do_lower_case=True,
        max_seq_length=settings.classifier_seq_length,
        learning_rate=settings.classifier_learning_rate_from_scratch,
        num_train_epochs=settings.classifier_epochs,
        max_train_examples=settings.classifier_max_train_examples,
        seed=12345,
        do_train=True,
        do_eval=True,
        do_predict=True,
    )
    classification = os.path.join(samples, "classification")
    started = stages.start(f"run_classifier.py --task_name=generic on {classification}")
    serving_model = os.path.join(paths["classifier"], "serving_model")
    run_script(
        scripts_dir,
        "run_classifier.py",
        task_name="generic",
        data_dir=classification,
        text_a_column="text_a",
        label_column="label",
        output_dir=paths["classifier"],
        train_batch_size=32,
        **model_flags,
    )
    classifier_eval = read_key_values(os.path.join(paths["classifier"], "eval_results.txt"))
    stages.done(
        "run_classifier (sentiment)",
        started,
        f"dev accuracy {float(classifier_eval['eval_accuracy']):.3f}{settings.score_caveat()}, "
        f"{serving_model}",
    )

    entities = os.path.join(samples, "ner")
    started = stages.start(f"run_classifier.py --task_name=chinese_ner on {entities}")
    run_script(
        scripts_dir,
        "run_classifier.py",
        task_name="chinese_ner",
        data_dir=entities,
        output_dir=paths["ner"],
        train_batch_size=16,
        **model_flags,
    )
    ner_eval = read_key_values(os.path.join(paths["ner"], "eval_results.txt"))
    stages.done(
        "run_classifier (NER)",
        started,
        f"dev entity F1 {float(ner_eval['eval_f1']):.3f}{settings.score_caveat()}, character accuracy "
        f"{float(ner_eval['eval_accuracy']):.3f} ({paths['ner']}/eval_predictions.txt)",
    )

    started = stages.start("classify raw Chinese sentences with the serving SavedModel")
    predictions = predict_sentences(serving_model, CHINESE_DEMO_SENTENCES, SENTIMENT_NAMES)
    stages.done("predict", started, "the predictions above")

    summary = {
        "vocab_size": vocab_size,
        "pretraining_instances": data_summary.get("instances"),
        "pretraining_eval": {k: float(v) for k, v in pretraining_eval.items()},
        "classifier_eval": {k: float(v) for k, v in classifier_eval.items()},
        "ner_eval": {k: float(v) for k, v in ner_eval.items()},
        "predictions": predictions,
        "paths": paths | {"serving_model": serving_model},
        "stage_seconds": dict(stages.times),
        "total_seconds": time.time() - started_all,
    }
    with open(os.path.join(output_dir, "demo_summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2, ensure_ascii=False)
    print(
        f"\n== demo finished in {summary['total_seconds']:.0f} s; everything is in {output_dir} "
        f"(summary: {output_dir}/demo_summary.json)"
    )
    return summary
