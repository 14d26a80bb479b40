"""The corpus reader (official_bert/data/text_corpus.py): documents per file, gzip, chunks."""

import gzip

import pytest

from official_bert.data.text_corpus import (
    CorpusCounters,
    expand_input_patterns,
    read_corpus_chunks,
    read_file_documents,
)

TEXT = b"First sentence.\n  Second one.  \n\n\n\nOther document.\n\nLast, no blank line after it."


def test_documents_of_a_plain_and_of_a_gzip_file_are_the_same(tmp_path):
    (tmp_path / "a.txt").write_bytes(TEXT)
    (tmp_path / "a.txt.gz").write_bytes(gzip.compress(TEXT))
    plain_counters, gzip_counters = CorpusCounters(), CorpusCounters()
    plain = list(read_file_documents(str(tmp_path / "a.txt"), counters=plain_counters))
    from_gzip = list(read_file_documents(str(tmp_path / "a.txt.gz"), counters=gzip_counters))
    assert [d.sentences for d in plain] == [
        ["First sentence.", "Second one."],
        ["Other document."],
        ["Last, no blank line after it."],
    ]
    assert [d.ended_by_blank_line for d in plain] == [True, True, False]
    assert plain == from_gzip
    assert plain_counters.lines == gzip_counters.lines == 8
    assert plain_counters.bytes_read == gzip_counters.bytes_read == len(TEXT)


def test_a_chunk_closes_only_at_a_blank_line(tmp_path):
    # The last document of a file without a trailing blank line stays in the open chunk, as
    # the chunks have always been cut (the local writer's output bytes depend on it).
    (tmp_path / "a.txt").write_bytes(TEXT)
    (tmp_path / "b.txt").write_bytes(b"Next file.\n")
    files = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    chunks = list(read_corpus_chunks(files, documents_per_chunk=1, chunk_bytes=10**6))
    assert [chunk.documents for chunk in chunks] == [
        [["First sentence.", "Second one."]],
        [["Other document."]],
        [["Last, no blank line after it."], ["Next file."]],
    ]


def test_invalid_utf8_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.txt.gz"
    path.write_bytes(gzip.compress(b"good.\nbad \xff.\n"))
    with pytest.raises(ValueError, match=r"bad.txt.gz, line 2 \(byte \d+ of the line\): not UTF-8"):
        list(read_file_documents(str(path)))
    counters = CorpusCounters()
    documents = list(read_file_documents(str(path), "skip", counters))
    assert [d.sentences for d in documents] == [["good."]] and counters.skipped_lines == 1


def test_a_folder_is_refused_alone_with_a_file_or_matched_by_a_glob(tmp_path):
    """TensorFlow reads no line from a folder: alone it looked like an empty corpus, beside a
    file it was skipped without a word."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "part1.txt").write_text("a b.\n")
    (tmp_path / "other.txt").write_text("c d.\n")
    hint = rf"is a folder; give files or a glob such as {folder}/\*"
    with pytest.raises(IsADirectoryError, match=rf"--input_file: {folder} {hint}"):
        expand_input_patterns(str(folder))
    with pytest.raises(IsADirectoryError, match=hint):
        expand_input_patterns(f"{tmp_path}/other.txt,{folder}")
    with pytest.raises(IsADirectoryError, match=rf"{folder} \(matched by '{tmp_path}/\*'\) "):
        expand_input_patterns(f"{tmp_path}/*")
    assert expand_input_patterns(f"{folder}/*") == [str(folder / "part1.txt")]


def test_a_chunk_holds_the_fewest_documents_asked_and_a_short_tail_joins_the_last(tmp_path):
    # Documents larger than chunk_bytes (books): each would close a chunk of its own.
    (tmp_path / "books.txt").write_text("".join(f"Book {n} text.\n\n" for n in range(7)))
    files = [str(tmp_path / "books.txt")]
    chunks = list(read_corpus_chunks(files, 1000, chunk_bytes=1, min_documents=3))
    assert [len(chunk.documents) for chunk in chunks] == [3, 4]  # the 7th joined the 2nd
    assert [chunk.index for chunk in chunks] == [0, 1]
    assert chunks[1].num_bytes == sum(len(f"Book {n} text.\n") for n in range(3, 7))
    assert [len(c.documents) for c in read_corpus_chunks(files, 1000, 1, min_documents=8)] == [7]
    assert len(list(read_corpus_chunks(files, 1000, chunk_bytes=1))) == 7
