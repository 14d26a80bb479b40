"""Fine-tuning BERT to tag words (named entities, part-of-speech) with the runner:
run_classifier.py with a tagging task (`--task_name=conll`).

The original release had no tagging script; the BERT paper's CoNLL-2003 NER experiments
(section 5.3) are the model: a linear layer on each word's first wordpiece, fine-tuned end to end
or over frozen features (--feature_mode, as for classification).
"""

from __future__ import annotations

import os

import numpy as np
from absl import logging

from official_bert.config import write_text_atomically
from official_bert.data.tagging.character_ner import CharacterNerProcessor
from official_bert.data.tagging.examples import TaggedSentence
from official_bert.data.tagging.features import (
    encode_tagged_sentences,
    encode_tagged_windows,
    word_predictions,
)
from official_bert.evaluation.tagging_metrics import tagging_metrics
from official_bert.export.tagger_serving import export_tagger_serving_model
from official_bert.models import BertTokenTagger, FeatureBasedClassifier
from official_bert.tasks.classification import ClassificationTask, predict_records
from official_bert.tasks.classification_objective import mean_eval_loss
from official_bert.tasks.finetuning import (
    create_encoder,
    serving_encoder_dtype,
    serving_export_dir,
)
from official_bert.tasks.tagging_objective import tagging_loss, tagging_loss_denominators
from official_bert.training.runner import write_eval_results


def write_tagged_file(
    path: str, sentences: list[TaggedSentence], predicted: list[list[str]], with_gold: bool
) -> None:
    """Writes predictions in the CoNLL layout: `word predicted` (or `word gold predicted`, the
    input of conlleval) per line, a blank line after each sentence."""
    lines = []
    for sentence, tags in zip(sentences, predicted, strict=True):
        for position, (word, tag) in enumerate(zip(sentence.words, tags, strict=True)):
            columns = [word, sentence.tags[position], tag] if with_gold else [word, tag]
            lines.append(" ".join(columns) + "\n")
        lines.append("\n")
    write_text_atomically(path, "".join(lines))


def _predict_words(model, records, sentences, labels, batch_size, options, setup):
    """Per sentence, the tag logits of its words (float32 [num_words, num_tags]) and the
    predicted tag names."""
    outputs = predict_records(
        model, records, batch_size, options, setup, keep=("label_weights", "sentence_index")
    )
    logits = word_predictions(
        outputs["outputs"], outputs["label_weights"], outputs["sentence_index"], len(sentences)
    )
    tags = [[labels[index] for index in np.argmax(words, axis=-1)] for words in logits]
    return logits, tags


class TaggingTask(ClassificationTask):
    """Token tagging on a TaggingProcessor's task (run_classifier.py --task_name=conll).

    Writes to output_dir: train/eval/predict .tf_record (reused while inputs and settings are
    unchanged), checkpoints (a rerun resumes), eval_results.txt ("key = value": eval_accuracy
    over words, eval_loss, and for entity tags (B-/I-/E-/S-) eval_precision, eval_recall,
    eval_f1 and eval_<type>_f1, conlleval's entity scores; global_step), eval_predictions.txt
    (`word gold predicted`) and test_predictions.txt (`word predicted`), both in the CoNLL
    layout, and for frozen_scalar_mix scalar_mix_weights.json. Every word is tagged, also in
    sentences longer than max_seq_length (see data/tagging/features.py): split without overlap,
    or with doc_stride as overlapping windows, each word tagged in its max-context window.

    After training, a serving SavedModel that tags raw text (export/tagger_serving.py;
    output_dir/serving_model unless export_dir says otherwise, '' skips it).
    """

    kind = "token tagging"
    encode_examples = staticmethod(encode_tagged_sentences)
    encode_windows = staticmethod(encode_tagged_windows)

    def build_model(self):
        options = self.options
        encoder = create_encoder(options)
        if options.feature_mode == "finetune":
            model = BertTokenTagger(encoder, num_tags=len(self.labels))
        else:
            model = FeatureBasedClassifier(
                encoder,
                num_classes=len(self.labels),
                features=options.feature_mode.removeprefix("frozen_"),
                per_token=True,
            )
        model.build()
        return model

    def loss_fn(self):
        return tagging_loss

    def loss_denominators_fn(self):
        return tagging_loss_denominators

    def export(self, runner) -> str | None:
        export_dir = serving_export_dir(self.options)
        if export_dir is None:
            return None
        return export_tagger_serving_model(
            runner.model,
            self.packer,
            self.labels,
            export_dir,
            encoder_dtype=serving_encoder_dtype(self.options, runner.model),
            characters_are_words=isinstance(self.processor, CharacterNerProcessor),
            doc_stride=self.options.doc_stride,
        )

    def evaluate(self, runner) -> dict:
        options, labels = self.options, self.labels
        sentences = self.processor.get_examples("dev")
        logits, predicted = _predict_words(
            runner.model,
            self.records["dev"],
            sentences,
            labels,
            options.eval_batch_size,
            options,
            self.setup,
        )
        metrics = tagging_metrics([list(s.tags) for s in sentences], predicted, labels)
        eval_results = {f"eval_{name}": value for name, value in metrics.items()}
        tag_ids = {tag: index for index, tag in enumerate(labels)}
        gold = np.array([tag_ids[tag] for sentence in sentences for tag in sentence.tags])
        eval_results["eval_loss"] = mean_eval_loss(
            np.concatenate(logits), gold, np.ones(len(gold)), is_regression=False
        )
        write_eval_results(
            os.path.join(options.output_dir, "eval_results.txt"), eval_results, runner.step
        )
        logging.info("Eval results: %s", eval_results)
        write_tagged_file(
            os.path.join(options.output_dir, "eval_predictions.txt"), sentences, predicted, True
        )
        return {"eval": eval_results}

    def predict(self, runner) -> dict:
        options = self.options
        sentences = self.processor.get_examples("test")
        _, predicted = _predict_words(
            runner.model,
            self.records["test"],
            sentences,
            self.labels,
            options.predict_batch_size,
            options,
            self.setup,
        )
        path = os.path.join(options.output_dir, "test_predictions.txt")
        write_tagged_file(path, sentences, predicted, with_gold=False)
        logging.info("Wrote the tags of %d test sentences to %s", len(sentences), path)
        return {"predictions": predicted}
