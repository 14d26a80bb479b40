"""Writes samples/zh/vocab.txt: BERT's special tokens, then every character of the Chinese
corpus sample once (sorted), so that the sample tokenizes without [UNK] and without the shared
bert-base-chinese vocabulary. Run from the repository root: python samples/zh/make_vocab.py"""

from pathlib import Path

HERE = Path(__file__).parent
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def main():
    text = (HERE / "pretraining_corpus.txt").read_text(encoding="utf-8")
    characters = sorted({character for character in text if not character.isspace()})
    (HERE / "vocab.txt").write_text("\n".join(SPECIAL_TOKENS + characters) + "\n", "utf-8")


if __name__ == "__main__":
    main()
