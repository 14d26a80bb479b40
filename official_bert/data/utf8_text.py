"""A data file's bytes as text: UTF-8, or one line that names the file, the line and the fix.

A Chinese user's TSV or JSON is as likely GBK/GB18030 as UTF-8 (Excel on Windows saves CSVs in
the system's code page), and a UTF-16 file is what "Unicode text" means to some editors. Python's
own decoding error names neither the file nor the line, so the readers decode through here.
"""

from __future__ import annotations

import tensorflow as tf

# The byte-order marks of UTF-16 (little- and big-endian): such a file is not UTF-8 from its
# first byte, and says which encoding it is.
_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


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
        raise error_class(
            f"{path}, line {line_number} (byte {error.start}): {found}; expected UTF-8: "
            f"convert the file, e.g. iconv -f {source} -t UTF-8 FILE > FILE.utf8"
        ) from None


def read_utf8_file(path: str, error_class: type[ValueError]) -> str:
    """The text of the file `path` (local or gs://), as decode_utf8 gives it."""
    with tf.io.gfile.GFile(path, "rb") as reader:
        return decode_utf8(reader.read(), path, error_class)
