"""BertPretrainer: encoder + masked-LM head + next-sentence head (or a left-to-right LM)."""

from __future__ import annotations

import keras

from official_bert.layers.classification_head import ClassificationHead
from official_bert.layers.masked_lm_head import MaskedLMHead
from official_bert.models.bert_encoder import BertEncoder
from official_bert.models.encoder_with_heads import EncoderWithHeads


@keras.saving.register_keras_serializable(package="official_bert")
class BertPretrainer(EncoderWithHeads):
    """The pre-training model of the original run_pretraining.py.

    Inputs (dict): the encoder's `input_word_ids`, `input_mask`, `input_type_ids` (int32
    [batch, seq_length]) and `masked_lm_positions` (int32 [batch, num_predictions]).

    Outputs (dict): the encoder's outputs, plus `mlm_logits` float32
    [batch, num_predictions, vocab_size] and, with `use_next_sentence_label`,
    `next_sentence_logits` float32 [batch, 2] (class 0 = B is the real next segment).

    objective="ltr" is the BERT paper's "LTR & No NSP" ablation (section 5.1): a left-to-right
    language model. It needs a causal encoder and no next-sentence head; `masked_lm_positions`
    is not read, and the same tied head (the original's cls/predictions weights) gives
    `lm_logits` float32 [batch, seq_length, vocab_size] at every position, position t
    predicting token t + 1.

    last_layer_at_predictions_only=True (objective "mlm"): the encoder's last layer runs only
    at [CLS] and `masked_lm_positions` (BertEncoder's `output_positions`), the only positions
    the two heads read, so `mlm_logits` and `next_sentence_logits` are the same (to float
    rounding) for less work; the outputs' `sequence_output` is then float
    [batch, num_predictions, hidden_size], the last layer at the prediction slots. The
    pre-training task turns it on with the fast kernels; keep the default (False) where the
    full `sequence_output` is wanted beside the logits (a TF Hub module's `mlm`).

    masked_lm_activation, masked_lm_layer_norm_epsilon: the masked-LM head's transform
    activation and LayerNorm epsilon; None (the default) is the encoder's, as in the original
    (run_pretraining.py's get_masked_lm_output applies bert_config.hidden_act and the same
    LayerNorm). keras-hub's BertMaskedLM head runs "gelu_exact" with 1e-5 whatever its
    backbone runs (tanh GELU, 1e-12), so a model read from such a preset sets both;
    from_bert_config takes them from a BertConfig.
    """

    def __init__(
        self,
        encoder: BertEncoder,
        use_next_sentence_label: bool = True,
        objective: str = "mlm",
        last_layer_at_predictions_only: bool = False,
        masked_lm_activation: str | None = None,
        masked_lm_layer_norm_epsilon: float | None = None,
        **kwargs,
    ):
        super().__init__(encoder, **kwargs)
        if objective not in ("mlm", "ltr"):
            raise ValueError(f"objective must be 'mlm' or 'ltr', got {objective!r}")
        if objective == "ltr" and use_next_sentence_label:
            raise ValueError(
                "objective='ltr' is the paper's 'LTR & No NSP': pass use_next_sentence_label=False"
            )
        if objective == "ltr" and not encoder.causal:
            raise ValueError(
                "objective='ltr' needs a causal encoder (BertEncoder(..., causal=True)); a "
                "bidirectional one sees the very token each position predicts"
            )
        if last_layer_at_predictions_only and objective != "mlm":
            raise ValueError(
                "last_layer_at_predictions_only needs objective='mlm': the left-to-right LM "
                "predicts at every position"
            )
        self.use_next_sentence_label = use_next_sentence_label
        self.objective = objective
        self.last_layer_at_predictions_only = last_layer_at_predictions_only
        self.masked_lm_activation = masked_lm_activation
        self.masked_lm_layer_norm_epsilon = masked_lm_layer_norm_epsilon

        # === Layers ===
        self.masked_lm = MaskedLMHead(
            vocab_size=encoder.vocab_size,
            hidden_size=encoder.hidden_size,
            activation=masked_lm_activation or encoder.activation,
            initializer_range=encoder.initializer_range,
            layer_norm_epsilon=(
                encoder.layer_norm_epsilon
                if masked_lm_layer_norm_epsilon is None
                else masked_lm_layer_norm_epsilon
            ),
            token_embedding=encoder.token_embedding,
            dtype=encoder.dtype_policy,
            name="masked_lm",
        )
        self.next_sentence = None
        if use_next_sentence_label:
            # No dropout: the original applies the seq_relationship weights to the pooled output
            # directly.
            self.next_sentence = ClassificationHead.for_encoder(
                encoder, num_classes=2, dropout_rate=0.0, name="next_sentence"
            )

    @classmethod
    def from_bert_config(cls, encoder: BertEncoder, config, **kwargs) -> BertPretrainer:
        """A pretrainer on `encoder` (built from the BertConfig `config`) whose masked-LM head
        runs as `config` says: the encoder's activation and epsilon, unless its extra fields
        `masked_lm_hidden_act` and `masked_lm_layer_norm_eps` name others (a keras-hub
        BertMaskedLM preset's config, or a bert_config.json converted from one). Other
        arguments as the constructor's."""
        return cls(
            encoder,
            masked_lm_activation=config.extra_fields.get("masked_lm_hidden_act"),
            masked_lm_layer_norm_epsilon=config.extra_fields.get("masked_lm_layer_norm_eps"),
            **kwargs,
        )

    @property
    def input_ranks(self) -> dict[str, int]:
        # The masked LM reads its positions; the left-to-right LM predicts every one.
        extra = {} if self.objective == "ltr" else {"masked_lm_positions": 2}
        return {**EncoderWithHeads.input_ranks, **extra}

    def build(self, input_shape=None):
        self.build_encoder()
        self.masked_lm.build()
        if self.next_sentence is not None:
            self.next_sentence.build((None, self.encoder.hidden_size))
        self.built = True

    def call(self, inputs, training=None):
        if self.last_layer_at_predictions_only:
            outputs = dict(
                self.encoder(
                    inputs, training=training, output_positions=inputs["masked_lm_positions"]
                )
            )
            # Already at the prediction slots.
            outputs["mlm_logits"] = self.masked_lm(outputs["sequence_output"])
        else:
            outputs = dict(self.encoder(inputs, training=training))
            if self.objective == "ltr":
                outputs["lm_logits"] = self.masked_lm(outputs["sequence_output"])
                return outputs
            outputs["mlm_logits"] = self.masked_lm(
                outputs["sequence_output"], inputs["masked_lm_positions"]
            )
        if self.next_sentence is not None:
            outputs["next_sentence_logits"] = self.next_sentence(
                outputs["pooled_output"], training=training
            )
        return outputs

    # === Config ===
    def get_config(self):
        config = super().get_config()
        config.update(
            use_next_sentence_label=self.use_next_sentence_label,
            objective=self.objective,
            last_layer_at_predictions_only=self.last_layer_at_predictions_only,
            masked_lm_activation=self.masked_lm_activation,
            masked_lm_layer_norm_epsilon=self.masked_lm_layer_norm_epsilon,
        )
        return config
