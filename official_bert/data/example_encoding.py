"""Serializing many `tf.train.Example`s at once from numpy arrays.

Written by hand because building one `tf.train.Example` proto per instance costs tens of
microseconds in Python, which would dominate pre-training data generation. The protobuf wire
format of an Example holding int64/float lists is simple and stable; the result is byte-for-byte
what a proto serializer emits for the same features in the same order, and parses with
`tf.io.parse_single_example` (tested).
"""

from __future__ import annotations

import numpy as np

# Wire-format tags: field number << 3 | wire type (2 = length-delimited).
_TAG_FEATURES = b"\x0a"  # Example.features, Features.feature (map entry), Int64List/FloatList.value
_TAG_MAP_VALUE = b"\x12"  # map entry value
_TAG_FLOAT_LIST = b"\x12"  # Feature.float_list
_TAG_INT64_LIST = b"\x1a"  # Feature.int64_list
_MAX_VARINT_BYTES = 5  # enough for values < 2**35 (token ids, positions, labels)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _packed_varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Varint bytes of every value of int [rows, length] >= 0, all rows concatenated (uint8), and
    the byte offsets of the rows ([rows + 1])."""
    values = np.asarray(values)
    offsets = np.zeros(values.shape[0] + 1, np.int64)
    if values.size == 0:
        return np.zeros(0, np.uint8), offsets
    if values.min() < 0 or values.max() >= 1 << (7 * _MAX_VARINT_BYTES):
        raise ValueError("int features must be in [0, 2**35) for this encoder")
    largest = int(values.max())
    if largest < 0x80:  # one byte per value: the common case of masks, segments, labels
        offsets[1:] = np.arange(1, values.shape[0] + 1) * values.shape[1]
        return values.astype(np.uint8).ravel(), offsets
    values = values.astype(np.uint64)
    num_bytes = (largest.bit_length() + 6) // 7
    widths = np.ones(values.shape, np.int64)
    for k in range(1, num_bytes):
        widths += values >= np.uint64(1 << (7 * k))
    encoded = np.empty((*values.shape, num_bytes), np.uint8)
    for k in range(num_bytes):
        low_bits = ((values >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        encoded[..., k] = low_bits | ((widths > k + 1).astype(np.uint8) << 7)
    flat = encoded[np.arange(num_bytes) < widths[..., None]]
    np.cumsum(widths.sum(axis=1), out=offsets[1:])
    return flat, offsets


class _FeatureHeaders:
    """Bytes that precede a packed payload of a given length, per feature name (cached)."""

    def __init__(self, name: str, list_tag: bytes):
        self._key = name.encode("utf-8")
        self._list_tag = list_tag
        self._cache: dict[int, bytes] = {}

    def __call__(self, payload_length: int) -> bytes:
        header = self._cache.get(payload_length)
        if header is None:
            value_list = _TAG_FEATURES + _varint(payload_length)  # Int64List/FloatList.value
            feature = self._list_tag + _varint(len(value_list) + payload_length)
            entry = (
                _TAG_FEATURES
                + _varint(len(self._key))
                + self._key
                + _TAG_MAP_VALUE
                + _varint(len(feature) + len(value_list) + payload_length)
            )
            entry_length = len(entry) + len(feature) + len(value_list) + payload_length
            header = _TAG_FEATURES + _varint(entry_length) + entry + feature + value_list
            self._cache[payload_length] = header
        return header


class ExampleEncoder:
    """Serializes rows of int64 and float features as `tf.train.Example` bytes.

    Args:
      int_features: names of int64-list features, in the order they are written.
      float_features: names of float-list features, written after the int ones.

    `encode(arrays)` takes a dict name -> numpy array [num_examples, length] (ints >= 0 for int
    features) and returns a list of num_examples serialized Examples.
    """

    def __init__(self, int_features: list[str], float_features: list[str] = ()):
        self.int_features = list(int_features)
        self.float_features = list(float_features)
        self._headers = {name: _FeatureHeaders(name, _TAG_INT64_LIST) for name in int_features}
        self._headers.update(
            {name: _FeatureHeaders(name, _TAG_FLOAT_LIST) for name in float_features}
        )

    def encode(self, arrays: dict[str, np.ndarray]) -> list[bytes]:
        num_examples = len(next(iter(arrays.values())))
        if num_examples == 0:
            return []
        # Every example is a sequence of pieces: its own header, then per feature a header and
        # a payload. All pieces are gathered from one source buffer with a single numpy index,
        # so the per-example Python work is one slice.
        source = []  # byte arrays, concatenated below
        source_size = 0

        def add_source(data: np.ndarray) -> int:
            nonlocal source_size
            source.append(data)
            source_size += len(data)
            return source_size - len(data)

        piece_starts, piece_lengths = [], []
        features_length = np.zeros(num_examples, np.int64)
        for name in self.int_features + self.float_features:
            values = np.asarray(arrays[name])
            if values.ndim != 2 or len(values) != num_examples:
                raise ValueError(
                    f"feature {name}: expected [{num_examples}, length], got {values.shape}"
                )
            if name in self.float_features:
                flat = np.frombuffer(np.ascontiguousarray(values, dtype="<f4").tobytes(), np.uint8)
                offsets = np.arange(num_examples + 1, dtype=np.int64) * values.shape[1] * 4
            else:
                flat, offsets = _packed_varints(values)
            payload_lengths = np.diff(offsets)
            header_starts, header_lengths = self._header_pieces(
                self._headers[name], payload_lengths, add_source
            )
            piece_starts += [header_starts, add_source(flat) + offsets[:-1]]
            piece_lengths += [header_lengths, payload_lengths]
            features_length += header_lengths + payload_lengths
        example_starts, example_lengths = self._header_pieces(
            lambda length: _TAG_FEATURES + _varint(length), features_length, add_source
        )
        starts = np.stack([example_starts, *piece_starts], axis=1).ravel()
        lengths = np.stack([example_lengths, *piece_lengths], axis=1).ravel()
        total = int(lengths.sum())
        # int32 indices halve the memory traffic of the gather; callers encode in batches.
        index_type = np.int32 if max(total, source_size) < 2**31 else np.int64
        output_starts = np.cumsum(lengths) - lengths
        index = np.repeat((starts - output_starts).astype(index_type), lengths)
        index += np.arange(total, dtype=index_type)
        output = np.concatenate(source)[index].tobytes()
        row_ends = np.cumsum(lengths.reshape(num_examples, -1).sum(axis=1)).tolist()
        row_starts = [0, *row_ends[:-1]]
        return [output[start:end] for start, end in zip(row_starts, row_ends, strict=True)]

    @staticmethod
    def _header_pieces(make_header, payload_lengths: np.ndarray, add_source):
        """Source offsets and lengths of the header for each payload length (few distinct)."""
        unique_lengths, inverse = np.unique(payload_lengths, return_inverse=True)
        headers = [make_header(int(length)) for length in unique_lengths]
        starts = np.array([add_source(np.frombuffer(h, np.uint8)) for h in headers], np.int64)
        lengths = np.array([len(h) for h in headers], np.int64)
        return starts[inverse], lengths[inverse]
