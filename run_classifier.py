"""Fine-tunes BERT on a sentence (pair) classification task: GLUE, XNLI, or any TSV/CSV; or
on a token tagging task (named entities, part-of-speech) in the CoNLL layout (--task_name=conll).

  python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \
    --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
    --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 --output_dir=/tmp/mrpc_output/
"""

from absl import app, flags

from official_bert.data.classification.examples import processor_names
from official_bert.kernels import use_fast_kernels
from official_bert.training.classifier_finetuning import (
    FEATURE_MODES,
    ClassifierOptions,
    run_classifier,
)
from official_bert.training.finetuning_flags import define_finetuning_flags, finetuning_flag_values

FLAGS = flags.FLAGS

# The original model, data, training and prediction flags, the runner's flags, --seed,
# --trim_padding, ...
define_finetuning_flags()
# === The original flags of one task ===
flags.DEFINE_string("data_dir", None, "The task's folder (train.tsv, dev.tsv, test.tsv, ...).")
flags.DEFINE_string("task_name", None, f"The task: one of {processor_names()}.")
# === TF2 flags ===
flags.DEFINE_enum(
    "feature_mode",
    "finetune",
    list(FEATURE_MODES),
    "finetune: train the whole model (the original). frozen_last / frozen_concat_last4 / "
    "frozen_scalar_mix: keep the encoder frozen (dropout off) and train a head on the [CLS] vector "
    "(each token's vector for tagging) of the last layer / of the last 4 layers concatenated / of "
    "a learned ScalarMix of all layers (written to output_dir/scalar_mix_weights.json).",
)
flags.DEFINE_string(
    "export_dir", None, "Raw-text serving SavedModel (default output_dir/serving_model; '' skips)."
)
# === The generic task (--task_name=generic), conll and XNLI ===
flags.DEFINE_string("text_a_column", "0", "generic: index or header name of the first text.")
flags.DEFINE_string("text_b_column", None, "generic: index or name of the second text, if any.")
flags.DEFINE_string(
    "label_column", "-1", "generic: index or header name of the label; conll: the tag's column."
)
flags.DEFINE_list(
    "labels", None, "generic, conll: the label (tag) names (default: those of train)."
)
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
    if task == "conll":
        return dict(label_column=FLAGS.label_column, labels=FLAGS.labels)
    return {}


def main(_):
    use_fast_kernels(FLAGS.fast_kernels)  # first: the host allocator is chosen before any tensor
    run_classifier(
        ClassifierOptions(
            **finetuning_flag_values(),
            task_name=FLAGS.task_name,
            data_dir=FLAGS.data_dir,
            processor_kwargs=_processor_kwargs(),
            export_dir=FLAGS.export_dir,
            feature_mode=FLAGS.feature_mode,
        )
    )


if __name__ == "__main__":
    app.run(main)
