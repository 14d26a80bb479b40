"""MultiTaskClassifier: one shared encoder, one classification head per task."""

from __future__ import annotations

import re

import keras

from official_bert.layers.classification_head import ClassificationHead
from official_bert.models.bert_encoder import BertEncoder
from official_bert.models.encoder_with_heads import EncoderWithHeads


def head_attribute(task_name: str) -> str:
    """The attribute (and layer name) of a task's head: "sts-b" -> "sts_b_classifier".

    Each head is an attribute of its own, keyed by its task's name rather than its position: a
    Keras 3 layer kept only in a dict or list is invisible to tf.train.Checkpoint, and a position
    would let a resumed run with the tasks in another order restore MRPC's head into CoLA's.
    """
    return re.sub(r"\W", "_", task_name.lower()) + "_classifier"


@keras.saving.register_keras_serializable(package="official_bert")
class MultiTaskClassifier(EncoderWithHeads):
    """Several sentence (pair) classification or regression tasks on one BERT encoder.

    Each task has a ClassificationHead (dropout, then `output_weights`/`output_bias` as the
    original run_classifier.py) on the shared pooled output.

    Args:
      encoder: the shared BertEncoder.
      task_num_classes: {task name: number of classes} in task order (1 for regression).
      dropout_rate: dropout on the pooled output, in every head.

    Inputs (dict): the encoder's `input_word_ids`, `input_mask`, `input_type_ids`
    (int32 [batch, seq_length]).

    Returns:
      {task name: float32 logits [batch, num_classes]} for every task. All heads run on every
      batch: each is one [hidden, num_classes] matmul, nothing beside the encoder, and it keeps
      the model's outputs (and so its tf.function signatures) the same whatever the task.
    """

    def __init__(
        self,
        encoder: BertEncoder,
        task_num_classes: dict[str, int],
        dropout_rate: float = 0.1,
        **kwargs,
    ):
        super().__init__(encoder, **kwargs)
        if not task_num_classes:
            raise ValueError("MultiTaskClassifier needs at least one task")
        attributes = [head_attribute(task) for task in task_num_classes]
        if len(set(attributes)) != len(attributes):
            raise ValueError(f"task names must differ (case and punctuation aside): {attributes}")
        # A tuple of pairs, not a dict: Keras would wrap a dict attribute in its tracking types.
        self._tasks = tuple((str(task), int(n)) for task, n in task_num_classes.items())
        self.dropout_rate = dropout_rate

        # === Layers ===
        for task, num_classes in self._tasks:
            attribute = head_attribute(task)
            head = ClassificationHead.for_encoder(
                encoder, num_classes=num_classes, dropout_rate=dropout_rate, name=attribute
            )
            setattr(self, attribute, head)

    @property
    def task_names(self) -> list[str]:
        return [task for task, _ in self._tasks]

    @property
    def task_num_classes(self) -> dict[str, int]:
        return dict(self._tasks)

    def head(self, task_name: str) -> ClassificationHead:
        """The ClassificationHead of `task_name`."""
        if task_name not in self.task_num_classes:
            raise KeyError(f"no head for task {task_name!r}; the tasks are {self.task_names}")
        return getattr(self, head_attribute(task_name))

    def build(self, input_shape=None):
        self.build_encoder()
        for task in self.task_names:
            self.head(task).build((None, self.encoder.hidden_size))
        self.built = True

    def call(self, inputs, training=None):
        # Built with the fast kernels, the last layer runs at [CLS] alone (all the heads read).
        pooled_output = self.encode_for_cls_heads(inputs, training)["pooled_output"]
        return {task: self.head(task)(pooled_output, training=training) for task in self.task_names}

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(task_num_classes=self.task_num_classes, dropout_rate=self.dropout_rate)
        return config
