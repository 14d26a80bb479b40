"""Writes samples/zh/vocab.txt and samples/zh/bert_config.json.

vocab.txt: BERT's special tokens, then every character of the Chinese samples once (sorted): the
pre-training corpus, the reading set's contexts, questions and answers, the classification set's
texts and the NER set's characters, so that they tokenize without [UNK] and without the shared
bert-base-chinese vocabulary. A letter or digit (lower-cased, as do_lower_case) also gets its
"##" twin, so that a Latin word or a number ("python", "2018") becomes pieces instead of [UNK].
A new sample adds its texts in `sample_texts`.

bert_config.json: a tiny BERT (2 layers of 32) with this vocabulary's size, for the commands of
docs/chinese.md and the tests; any real model uses its own config.

Run from the repository root after a sample changes: python samples/zh/make_vocab.py
"""

import json
from pathlib import Path

HERE = Path(__file__).parent
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TINY_CONFIG = {
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 64,
    "max_position_embeddings": 128,
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
    "type_vocab_size": 2,
}


def reading_texts():
    """The contexts, questions and answers of samples/zh/reading/*.json."""
    for path in sorted((HERE / "reading").glob("*.json")):
        for article in json.loads(path.read_text(encoding="utf-8"))["data"]:
            for paragraph in article["paragraphs"]:
                yield paragraph["context"]
                for qa in paragraph["qas"]:
                    yield qa["question"]
                    yield from (answer["text"] for answer in qa["answers"])


def classification_texts():
    """The text_a column of samples/zh/classification/*.tsv (`label<TAB>text_a`, a header)."""
    for path in sorted((HERE / "classification").glob("*.tsv")):
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            yield line.split("\t")[1]


def ner_texts():
    """The characters (first column) of samples/zh/ner/*.txt, one character per line."""
    for path in sorted((HERE / "ner").glob("*.txt")):
        yield "".join(line.split(" ")[0] for line in path.read_text(encoding="utf-8").split("\n"))


def sample_texts():
    yield (HERE / "pretraining_corpus.txt").read_text(encoding="utf-8")
    yield from reading_texts()
    yield from classification_texts()
    yield from ner_texts()


def main():
    characters = {character.lower() for text in sample_texts() for character in text}
    characters = sorted(character for character in characters if not character.isspace())
    pieces = [f"##{character}" for character in characters if character.isascii()]
    pieces = [piece for piece in pieces if piece[2:].isalnum()]
    tokens = SPECIAL_TOKENS + characters + pieces
    (HERE / "vocab.txt").write_text("\n".join(tokens) + "\n", "utf-8")
    config = dict(TINY_CONFIG, vocab_size=len(tokens))
    (HERE / "bert_config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
