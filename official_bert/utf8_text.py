"""A user's file as text or JSON: UTF-8, or one line that names the file, the place and the fix.

A Chinese user's TSV or JSON is as likely GBK/GB18030 as UTF-8 (Excel on Windows saves CSVs in
the system's code page), and a UTF-16 file is what "Unicode text" means to some editors. Python's
own decoding and JSON errors name neither the file nor, for bytes, the line, so the readers of
data files, configs and weight indexes read through here.
"""

from __future__ import annotations

import json

import tensorflow as tf

# The byte-order marks of UTF-16 (little- and big-endian): such a file is not UTF-8 from its
# first byte, and says which encoding it is.
_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def _not_utf8(path: str, where: str, found: str, source: str, hint: str = "") -> str:
    return (
        f"{path}, {where}: {found}; expected UTF-8: convert the file, e.g. iconv -f {source} "
        f"-t UTF-8 FILE > FILE.utf8{hint}"
    )


def decode_utf8_line(
    raw: bytes, path: str, line_number: int, error_class: type[ValueError], hint: str = ""
) -> str:
    """One line of the file `path` (the readers of corpora and input lines decode line by line,
    to stream), as text; `hint` ends the message (another way out, e.g. a flag that skips).

    Raises:
      error_class: the line is not UTF-8, named as decode_utf8 names it (the byte offset counted
        in the line).
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        where = f"line {line_number} (byte {error.start} of the line)"
        raise error_class(
            _not_utf8(path, where, f"not UTF-8 ({error.reason})", "GB18030", hint)
        ) from None


def decode_utf8(data: bytes, path: str, error_class: type[ValueError]) -> str:
    """`data`, the bytes of the file `path`, as text: UTF-8, a leading byte-order mark removed.

    Raises:
      error_class: the bytes are not UTF-8; the message names the file, the 1-based line and
        the byte offset of the first bad byte, and says how to convert the file.
    """
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        line_number = data[: error.start].count(b"\n") + 1
        if data.startswith(_UTF16_MARKS):
            found, source = "UTF-16 (it starts with UTF-16's byte-order mark)", "UTF-16"
        else:
            found, source = f"not UTF-8 ({error.reason})", "GB18030"
        where = f"line {line_number} (byte {error.start})"
        raise error_class(_not_utf8(path, where, found, source)) from None


def read_utf8_file(path: str, error_class: type[ValueError]) -> str:
    """The text of the file `path` (local or gs://), as decode_utf8 gives it."""
    with tf.io.gfile.GFile(path, "rb") as reader:
        return decode_utf8(reader.read(), path, error_class)


def read_json_file(path: str, error_class: type[ValueError]):
    """The JSON value in the file `path` (local or gs://), decoded as read_utf8_file does.

    Raises:
      error_class: the bytes are not UTF-8 (as decode_utf8 says), or the text is not JSON; the
        message names the file, the 1-based line and column, and what the parser expected.
    """
    text = read_utf8_file(path, error_class)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise error_class(
            f"{path}: not valid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        ) from None
