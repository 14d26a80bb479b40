"""Reading a pre-training corpus as a stream of documents, in bounded chunks.

Format (the original's): one sentence per line, a blank (or whitespace-only) line between
documents; a `.gz` file is read decompressed. Lines are stripped. Only a chunk of documents at a
time is held in memory.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
from collections.abc import Iterator
from typing import NamedTuple

import tensorflow as tf
from absl import logging

from official_bert.file_system import check_input_is_a_file
from official_bert.utf8_text import decode_utf8_line


@dataclasses.dataclass
class CorpusChunk:
    """Consecutive documents (lists of sentence strings) and where they came from;
    word_references, nested as `documents`, the lines of a word reference file
    (pretraining/word_segmentation.py), or None."""

    index: int
    documents: list[list[str]]
    num_bytes: int
    word_references: list[list] | None = None


@dataclasses.dataclass
class CorpusCounters:
    """Filled while reading: lines read, lines skipped for invalid UTF-8 and the files that held
    them, bytes read."""

    lines: int = 0
    skipped_lines: int = 0
    files_with_skipped_lines: int = 0
    bytes_read: int = 0


def _is_hidden_match(path: str, pattern: str) -> bool:
    """Whether a wildcard in `pattern` matched the dot file `path`; a shell's `*` skips dot files
    and TensorFlow's glob does not. Writers name their side files with a leading dot
    (side_file_names) so that `out.tfrecord*` or `dir/*` never reads them."""
    name, pattern_name = os.path.basename(path), os.path.basename(pattern)
    return name.startswith(".") and not pattern_name.startswith(".")


def expand_input_patterns(input_file: str) -> list[str]:
    """Files of a comma-separated list of paths or glob patterns, in the given order.

    A wildcard does not match a file whose name starts with a dot (as in a shell): writers put
    their temporaries and summaries under such names beside their outputs.

    Raises:
      FileNotFoundError: a pattern matches nothing.
      IsADirectoryError: a path or a wildcard's match is a folder (TensorFlow's reader would
        read no line from it, and the run would go on without its files); the message names it
        and the glob that gives its files.
    """
    files = []
    for pattern in [p.strip() for p in input_file.split(",") if p.strip()]:
        matches = sorted(tf.io.gfile.glob(pattern))
        if any(character in pattern for character in "*?["):
            hidden = [path for path in matches if _is_hidden_match(path, pattern)]
            if hidden:
                logging.info("--input_file %r: leaving out dot files %s", pattern, hidden)
            matches = [path for path in matches if path not in hidden]
        if not matches:
            raise FileNotFoundError(f"--input_file: no file matches {pattern!r}")
        for path in matches:
            if tf.io.gfile.isdir(path):
                matched = "" if path == pattern else f" (matched by {pattern!r})"
                raise IsADirectoryError(
                    f"--input_file: {path}{matched} is a folder; give files or a glob such as "
                    f"{path.rstrip('/')}/*"
                )
            check_input_is_a_file(path, "input_file")
        files.extend(matches)
    if not files:
        raise ValueError("--input_file is empty")
    return files


class FileDocument(NamedTuple):
    """A document of one input file: its sentences, the bytes of its lines, and whether a blank
    line ended it (False for the last document of a file that does not end in a blank line)."""

    sentences: list[str]
    num_bytes: int
    ended_by_blank_line: bool


def open_corpus_file(path: str):
    """A binary reader of `path` (any tf.io.gfile filesystem), decompressing a `.gz` file."""
    reader = tf.io.gfile.GFile(path, "rb")
    if path.endswith(".gz"):
        return gzip.GzipFile(fileobj=reader, mode="rb")
    return reader


def read_file_documents(
    path: str, on_decode_error: str = "fail", counters: CorpusCounters | None = None
) -> Iterator[FileDocument]:
    """The documents of one corpus file, in file order. A document never runs on into the next
    file (the original let a document without a trailing blank line do so).

    on_decode_error: "fail" raises ValueError naming the file and line of invalid UTF-8;
      "skip" drops the line and counts it in `counters.skipped_lines`.
    """
    if on_decode_error not in ("fail", "skip"):
        raise ValueError(f"on_decode_error must be 'fail' or 'skip', got {on_decode_error!r}")
    counters = counters if counters is not None else CorpusCounters()
    sentences: list[str] = []
    size = 0
    skipped_here = False
    with open_corpus_file(path) as reader:
        for line_number, raw in enumerate(reader, start=1):
            counters.lines += 1
            counters.bytes_read += len(raw)
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                if on_decode_error == "skip":
                    counters.skipped_lines += 1
                    counters.files_with_skipped_lines += not skipped_here
                    skipped_here = True
                    continue
                hint = ", or pass --on_decode_error=skip to leave such lines out"
                decode_utf8_line(raw, path, line_number, ValueError, hint)  # raises
            if not line:
                if sentences:
                    yield FileDocument(sentences, size, ended_by_blank_line=True)
                    sentences, size = [], 0
                continue
            sentences.append(line)
            size += len(raw)
    if sentences:
        yield FileDocument(sentences, size, ended_by_blank_line=False)


def read_corpus_chunks(
    files: list[str],
    documents_per_chunk: int,
    chunk_bytes: int,
    on_decode_error: str = "fail",
    counters: CorpusCounters | None = None,
    min_documents: int = 1,
) -> Iterator[CorpusChunk]:
    """Yields chunks of at most `documents_per_chunk` documents, closed early once they hold
    `chunk_bytes` of text (at a document boundary). A document never spans two files.

    min_documents: a chunk holds at least this many documents, whatever the two limits say
      (the last chunk, if shorter, joins the one before it; a corpus with fewer documents is
      one chunk). Next-sentence prediction draws a random B from another document of the same
      chunk: a chunk of one document (a book larger than chunk_bytes) would draw it from A's own
      document and label it random.
    on_decode_error: "fail" raises ValueError naming the file and line of invalid UTF-8;
      "skip" drops the line and counts it in `counters.skipped_lines`.
    """
    if on_decode_error not in ("fail", "skip"):
        raise ValueError(f"on_decode_error must be 'fail' or 'skip', got {on_decode_error!r}")
    counters = counters if counters is not None else CorpusCounters()
    documents: list[list[str]] = []
    size = 0
    index = 0
    held: CorpusChunk | None = None  # the last chunk closed, kept until the next one closes
    for path in files:
        for document in read_file_documents(path, on_decode_error, counters):
            documents.append(document.sentences)
            size += document.num_bytes
            # A chunk closes at a blank line only: the last document of a file without one
            # stays in the chunk (as the chunks have always been cut; the output depends on it).
            if (
                document.ended_by_blank_line
                and len(documents) >= min_documents
                and (len(documents) >= documents_per_chunk or size >= chunk_bytes)
            ):
                if held is not None:
                    yield held
                held = CorpusChunk(index, documents, size)
                index += 1
                documents, size = [], 0
    if documents and held is not None and len(documents) < min_documents:
        held.documents.extend(documents)
        held.num_bytes += size
        documents = []
    if held is not None:
        yield held
    if documents:
        yield CorpusChunk(index, documents, size)
