"""Writes samples/zh/pretraining_corpus_ref.txt: a word reference file for the Chinese corpus
sample, in the layout Hugging Face's run_chinese_ref.py writes (one JSON list per non-blank line:
the wordpiece positions, [CLS] = 0, of the CJK characters that continue a word), for
`create_pretraining_data.py --word_segmenter=ref_file` (docs/chinese.md).

run_chinese_ref.py takes its words from LTP; jieba stands in here. The sample holds CJK
ideographs and full-width punctuation only, each of which is one wordpiece in any BERT
vocabulary (its own or [UNK]), so the positions are those of the characters and the file suits
samples/zh/vocab.txt and Google's Chinese vocab alike. Deterministic; rerun after changing the
corpus, from the repository root:

  python samples/zh/make_word_refs.py
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from official_bert.data.pretraining.word_segmentation import (  # noqa: E402
    JiebaWordSegmenter,
    is_cjk_character,
)

HERE = Path(__file__).parent


def main():
    segmenter = JiebaWordSegmenter()
    references = []
    text = (HERE / "pretraining_corpus.txt").read_text(encoding="utf-8")
    for line in filter(None, (line.strip() for line in text.split("\n"))):
        marks = iter(segmenter.cjk_continuation_marks(line))
        positions = []
        for position, character in enumerate(line, start=1):  # [CLS] is position 0
            if character.isascii() or character.isspace():
                raise ValueError(f"{character!r} in {line!r}: not one wordpiece in every vocab")
            if is_cjk_character(character) and next(marks):
                positions.append(position)
        references.append(json.dumps(positions) + "\n")
    (HERE / "pretraining_corpus_ref.txt").write_text("".join(references), encoding="utf-8")


if __name__ == "__main__":
    main()
