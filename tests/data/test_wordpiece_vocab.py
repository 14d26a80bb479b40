"""learn_wordpiece_vocab: a vocab.txt that spells the whole corpus and works with our tokenizers."""

import pytest

from official_bert.data.wordpiece_vocab import SPECIAL_TOKENS, learn_wordpiece_vocab
from official_bert.tokenization import FullTokenizer
from tests.conftest import REPO_ROOT

CORPUS = REPO_ROOT / "sample_text.txt"


def _pieces(vocab_file, lines):
    tokenizer = FullTokenizer(str(vocab_file), do_lower_case=True)
    return [piece for line in lines for piece in tokenizer.tokenize(line)]


def test_learned_vocab_spells_the_corpus_without_unknowns(tmp_path):
    lines = [line for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    small = learn_wordpiece_vocab(str(CORPUS), str(tmp_path / "small.txt"), vocab_size=300)
    large = learn_wordpiece_vocab(str(CORPUS), str(tmp_path / "large.txt"), vocab_size=2000)
    assert (tmp_path / "large.txt").read_text(encoding="utf-8").splitlines() == large
    for vocab in (small, large):
        assert tuple(vocab[: len(SPECIAL_TOKENS)]) == SPECIAL_TOKENS
        assert len(vocab) == len(set(vocab))
        assert "the" in vocab and any(token.startswith("##") for token in vocab)
    assert len(small) <= 330 < len(large)  # the learner aims near the size asked for
    small_pieces = _pieces(tmp_path / "small.txt", lines)
    large_pieces = _pieces(tmp_path / "large.txt", lines)
    assert "[UNK]" not in small_pieces and "[UNK]" not in large_pieces
    # A larger vocabulary keeps more words whole: fewer pieces for the same text.
    assert len(large_pieces) < 0.8 * len(small_pieces), (len(large_pieces), len(small_pieces))


def test_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="no file matches"):
        learn_wordpiece_vocab(str(tmp_path / "missing*.txt"), str(tmp_path / "v.txt"))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no text found"):
        learn_wordpiece_vocab(str(empty), str(tmp_path / "v.txt"))
    with pytest.raises(ValueError, match="vocab_size must be above 5"):
        learn_wordpiece_vocab(str(CORPUS), str(tmp_path / "v.txt"), vocab_size=5)
