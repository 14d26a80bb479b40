"""Fine-tunes BERT on a sentence (pair) classification task: GLUE, XNLI, or any TSV/CSV.

  python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \
    --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
    --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 --output_dir=/tmp/mrpc_output/
"""

from absl import app, flags

from official_bert.checkpoints.loading import find_bert_config, read_bert_config
from official_bert.data.classifier_examples import processor_names
from official_bert.training.classifier_finetuning import (
    FEATURE_MODES,
    ClassifierOptions,
    run_classifier,
)
from official_bert.training.runner_flags import define_runner_flags, runner_flag_values

FLAGS = flags.FLAGS

# === The original flags ===
flags.DEFINE_string("data_dir", None, "The task's folder (train.tsv, dev.tsv, test.tsv, ...).")
flags.DEFINE_string(
    "bert_config_file", None, "bert_config.json (default: the one beside init_checkpoint)."
)
flags.DEFINE_string("task_name", None, f"The task: one of {processor_names()}.")
flags.DEFINE_string("vocab_file", None, "vocab.txt of the model (default: beside the config).")
flags.DEFINE_string("output_dir", None, "Checkpoints, records, results and the export go here.")
flags.DEFINE_string("init_checkpoint", None, "Initial weights: TF1, safetensors or ours.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (uncased models).")
flags.DEFINE_integer("max_seq_length", 128, "Wordpieces per example, after packing.")
flags.DEFINE_bool("do_train", False, "Whether to train.")
flags.DEFINE_bool("do_eval", False, "Whether to evaluate on the dev set.")
flags.DEFINE_bool("do_predict", False, "Whether to predict the test set (test_results.tsv).")
flags.DEFINE_integer("train_batch_size", 32, "Global training batch size.")
flags.DEFINE_integer("eval_batch_size", 8, "Evaluation batch size.")
flags.DEFINE_integer("predict_batch_size", 8, "Prediction batch size.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate (Adam).")
flags.DEFINE_float("num_train_epochs", 3.0, "Training epochs.")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps with linear warm-up.")
define_runner_flags()  # the original TPU/loop flags and the runner's TF2 flags
# === TF2 flags ===
flags.DEFINE_integer("seed", None, "Seed of the classifier's initialization, dropout, shuffling.")
flags.DEFINE_integer("max_train_examples", 0, "Train on the first N examples only (0: all).")
flags.DEFINE_bool(
    "trim_padding", True, "Cut each batch to its longest example (same results, faster; not TPU)."
)
flags.DEFINE_string(
    "hub_module_handle",
    None,
    "An encoder exported by export_tfhub.py to fine-tune (its bert_config.json, vocab and casing "
    "are the defaults of those flags).",
)
flags.DEFINE_enum(
    "feature_mode",
    "finetune",
    list(FEATURE_MODES),
    "finetune: train the whole model (the original). frozen_last / frozen_concat_last4 / "
    "frozen_scalar_mix: keep the encoder frozen (dropout off) and train a head on the [CLS] vector "
    "of the last layer / of the last 4 layers concatenated / of a learned ScalarMix of all layers "
    "(written to output_dir/scalar_mix_weights.json).",
)
flags.DEFINE_string(
    "export_dir", None, "Raw-text serving SavedModel (default output_dir/serving_model; '' skips)."
)
# === The generic task (--task_name=generic) and XNLI ===
flags.DEFINE_string("text_a_column", "0", "generic: index or header name of the first text.")
flags.DEFINE_string("text_b_column", None, "generic: index or name of the second text, if any.")
flags.DEFINE_string("label_column", "-1", "generic: index or header name of the label.")
flags.DEFINE_list("labels", None, "generic: the label names (default: those of train).")
flags.DEFINE_bool("is_regression", False, "generic: the label is a number.")
flags.DEFINE_bool("has_header", True, "generic: the files start with a header line.")
flags.DEFINE_string("xnli_language", "zh", "xnli: the language to train and evaluate.")
flags.mark_flags_as_required(["task_name", "data_dir", "output_dir"])


def _processor_kwargs() -> dict:
    task = FLAGS.task_name.lower()
    if task == "generic":
        return dict(
            text_a_column=FLAGS.text_a_column,
            text_b_column=FLAGS.text_b_column,
            label_column=FLAGS.label_column,
            labels=FLAGS.labels,
            is_regression=FLAGS.is_regression,
            has_header=FLAGS.has_header,
        )
    if task == "xnli":
        return dict(language=FLAGS.xnli_language)
    return {}


def main(_):
    config_file = FLAGS.bert_config_file or find_bert_config(FLAGS.init_checkpoint)
    vocab_file = FLAGS.vocab_file
    do_lower_case = FLAGS.do_lower_case
    if FLAGS.hub_module_handle:
        from official_bert.export.exported_bert_encoder import read_exported_encoder_settings

        module = read_exported_encoder_settings(FLAGS.hub_module_handle)
        config_file = FLAGS.bert_config_file or module["bert_config_file"]
        vocab_file = vocab_file or module["vocab_file"]
        if not FLAGS["do_lower_case"].present:
            do_lower_case = module["do_lower_case"]
    if not config_file:
        raise app.UsageError("--bert_config_file is required (none found beside init_checkpoint)")
    if not vocab_file:
        import os

        vocab_file = os.path.join(os.path.dirname(config_file), "vocab.txt")
    run_classifier(
        ClassifierOptions(
            bert_config=read_bert_config(config_file),
            bert_config_file=config_file,
            task_name=FLAGS.task_name,
            data_dir=FLAGS.data_dir,
            vocab_file=vocab_file,
            output_dir=FLAGS.output_dir,
            init_checkpoint=FLAGS.init_checkpoint,
            **runner_flag_values(),
            do_lower_case=do_lower_case,
            max_seq_length=FLAGS.max_seq_length,
            do_train=FLAGS.do_train,
            do_eval=FLAGS.do_eval,
            do_predict=FLAGS.do_predict,
            train_batch_size=FLAGS.train_batch_size,
            eval_batch_size=FLAGS.eval_batch_size,
            predict_batch_size=FLAGS.predict_batch_size,
            learning_rate=FLAGS.learning_rate,
            num_train_epochs=FLAGS.num_train_epochs,
            warmup_proportion=FLAGS.warmup_proportion,
            seed=FLAGS.seed,
            processor_kwargs=_processor_kwargs(),
            max_train_examples=FLAGS.max_train_examples,
            trim_padding=FLAGS.trim_padding,
            export_dir=FLAGS.export_dir,
            hub_module_handle=FLAGS.hub_module_handle,
            feature_mode=FLAGS.feature_mode,
        )
    )


if __name__ == "__main__":
    app.run(main)
