"""Multiple-choice questions (SWAG, C3) with the runner: run_classifier.py with a
multiple-choice task (`--task_name=swag` or `c3`).

The original release had no multiple-choice script; the BERT paper's SWAG experiment (section
4.4) is the model: each candidate packed with its context, a linear layer on each sequence's
[CLS] vector, softmax over the candidates.
"""

from __future__ import annotations

from official_bert.data.multiple_choice.features import encode_multiple_choice_examples
from official_bert.export.multiple_choice_serving import export_multiple_choice_serving_model
from official_bert.models import BertMultipleChoice
from official_bert.tasks.classification import ClassificationTask
from official_bert.tasks.finetuning import (
    create_encoder,
    serving_encoder_dtype,
    serving_export_dir,
)
from official_bert.training.runner import Runner


def validate_multiple_choice_options(options) -> None:
    """The run_classifier.py settings a multiple-choice task does not take, each named."""
    unsupported = {
        "feature_mode": options.feature_mode != "finetune",
        "doc_stride": options.doc_stride is not None,
        "multi_label": options.multi_label,
        "is_regression": options.is_regression,
    }
    for flag, is_set in unsupported.items():
        if is_set:
            raise ValueError(
                f"`{flag}` does not apply to the multiple-choice task {options.task_name!r}: "
                "leave it at its default (each candidate's sequence pair is cut to "
                "max_seq_length, and the whole model is fine-tuned)"
            )


class MultipleChoiceTask(ClassificationTask):
    """A MultipleChoiceProcessor's task (run_classifier.py --task_name=swag or c3).

    Writes to output_dir what the classification task writes, per question: train/eval/predict
    .tf_record (reused while inputs and settings are unchanged), checkpoints (a rerun resumes),
    eval_results.txt (eval_accuracy, eval_loss, global_step), test_results.tsv (each question's
    candidate probabilities, tab-separated, in test order; 0 for the slots of a question with
    fewer candidates), and after training a raw-text serving SavedModel
    (export/multiple_choice_serving.py; output_dir/serving_model unless export_dir says
    otherwise, '' skips it).
    """

    kind = "multiple choice"
    encode_examples = staticmethod(encode_multiple_choice_examples)

    def validate(self) -> None:
        super().validate()
        validate_multiple_choice_options(self.options)

    def build_model(self):
        model = BertMultipleChoice(create_encoder(self.options))
        model.build()
        return model

    def export(self, runner: Runner) -> str | None:
        export_dir = serving_export_dir(self.options)
        if export_dir is None:
            return None
        return export_multiple_choice_serving_model(
            runner.model,
            self.packer,
            export_dir,
            encoder_dtype=serving_encoder_dtype(self.options, runner.model),
        )
