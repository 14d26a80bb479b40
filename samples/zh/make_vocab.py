"""Writes samples/zh/vocab.txt: BERT's special tokens, then every non-ASCII character of the
Chinese samples once (sorted), so that they tokenize without [UNK] and without the shared
bert-base-chinese vocabulary. The samples are every .txt, .tsv and .json file under samples/zh
(the pre-training corpus, classification/, ner/ and any added since) except vocab.txt; ASCII is
left out, so the NER tags, the TSV headers and JSON keys add nothing. Rerun after adding or
regenerating a sample, from the repository root: python samples/zh/make_vocab.py"""

from pathlib import Path

HERE = Path(__file__).parent
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SAMPLE_SUFFIXES = (".txt", ".tsv", ".json")


def sample_files() -> list[Path]:
    """The text files of the Chinese samples, in a fixed order."""
    return sorted(
        path
        for path in HERE.rglob("*")
        if path.suffix in SAMPLE_SUFFIXES and path.name != "vocab.txt"
    )


def main():
    characters = set()
    for path in sample_files():
        text = path.read_text(encoding="utf-8")
        characters.update(char for char in text if not char.isascii() and not char.isspace())
    (HERE / "vocab.txt").write_text("\n".join(SPECIAL_TOKENS + sorted(characters)) + "\n", "utf-8")


if __name__ == "__main__":
    main()
