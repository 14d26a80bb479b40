"""PyTorch weight files (`torch.save` of a state dict, e.g. `pytorch_model.bin`) read into numpy
arrays without PyTorch.

Many BERTs on the Hugging Face Hub, the Chinese ones of HFL and the original `bert-base-chinese`
among them, publish only `pytorch_model.bin`. Installing PyTorch to read one file is a heavy ask
of a TensorFlow user, and `torch.load` runs whatever the file's pickle names. This reader
understands the two layouts `torch.save` writes and nothing else:

- the zip layout (PyTorch 1.6 and later): `<archive>/data.pkl` is a pickle whose tensors point, by
  key, at the raw storages `<archive>/data/<key>`; `<archive>/byteorder` says their byte order.
- the legacy layout (older uploads): five pickles in a row (a magic number, the protocol version,
  the writer's system info, the object, the list of storage keys), then each storage's raw bytes,
  preceded by its length in elements (int64), in the order of that list.

Its unpickler resolves only the names a state dict needs (`collections.OrderedDict`, the tensor
and parameter rebuild functions of `torch._utils`, the typed storage classes of `torch`); any
other name in the pickle is a ValueError naming it, so loading a file never runs its code.
Every view's offset, sizes and strides are checked to lie in its storage, each storage against
its size in the file, and the arrays may take at most 8 times the file's size (broadcast views
are copied out whole), so a damaged or crafted file is an error, not a crash or a memory blow-up.
Hand-written because neither TensorFlow nor safetensors reads this format.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import os
import pickle
import zipfile
import zlib

import ml_dtypes
import numpy as np

from official_bert.file_system import is_file, local_copy

_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
# torch's typed storage class names (still what torch.save pickles) -> numpy element types.
_STORAGE_DTYPES = {
    "FloatStorage": np.dtype(np.float32),
    "DoubleStorage": np.dtype(np.float64),
    "HalfStorage": np.dtype(np.float16),
    "BFloat16Storage": _BFLOAT16,  # widened to float32 when read
    "LongStorage": np.dtype(np.int64),
    "IntStorage": np.dtype(np.int32),
    "ShortStorage": np.dtype(np.int16),
    "CharStorage": np.dtype(np.int8),
    "ByteStorage": np.dtype(np.uint8),
    "BoolStorage": np.dtype(np.bool_),
}
# The magic number that starts a legacy-layout file (its first pickle).
_LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL_VERSION = 1001


class _RefusedGlobal(ValueError):
    """The pickle names a global outside the allow-list (the message names it)."""


# Frozen and slotted: a pickle's BUILD opcode can neither add nor change their fields.
@dataclasses.dataclass(frozen=True, slots=True)
class _StorageType:
    """What the pickle's `torch.<X>Storage` global resolves to."""

    name: str


@dataclasses.dataclass(frozen=True, slots=True)
class _StorageRef:
    """A storage the pickle points at: its key in the file, element type and length."""

    key: str
    dtype: np.dtype
    numel: int


@dataclasses.dataclass(frozen=True, slots=True)
class _PendingTensor:
    """A tensor the pickle describes (a strided view of a storage), read once storages are."""

    storage: _StorageRef
    offset: object
    shape: object
    strides: object


class _AllowedCall:
    """A callable the pickle may reach; it takes no attributes, so that the pickle's BUILD
    opcode cannot change the function behind it for the rest of the process."""

    __slots__ = ("_function",)

    def __init__(self, function):
        object.__setattr__(self, "_function", function)

    def __setattr__(self, name, value):
        raise pickle.UnpicklingError(f"setting {name} on {self._function.__name__}")

    def __call__(self, *args):
        return self._function(*args)


def _rebuild_tensor(storage, storage_offset, size, stride, *unused_state):
    # torch._utils._rebuild_tensor / _rebuild_tensor_v2(storage, offset, size, stride,
    # requires_grad, backward_hooks[, metadata]): only the view matters here. Its fields are
    # checked where the tensor is read (_materialize).
    if not isinstance(storage, _StorageRef):
        raise pickle.UnpicklingError(f"a tensor whose storage is {type(storage).__name__}")
    return _PendingTensor(storage, storage_offset, size, stride)


def _rebuild_parameter(data, *unused_state):
    # torch._utils._rebuild_parameter(data, requires_grad, backward_hooks[, state]): the tensor.
    return data


_ALLOWED_GLOBALS = {
    ("collections", "OrderedDict"): _AllowedCall(collections.OrderedDict),
    ("torch._utils", "_rebuild_tensor"): _AllowedCall(_rebuild_tensor),
    ("torch._utils", "_rebuild_tensor_v2"): _AllowedCall(_rebuild_tensor),
    ("torch._utils", "_rebuild_parameter"): _AllowedCall(_rebuild_parameter),
    ("torch._utils", "_rebuild_parameter_with_state"): _AllowedCall(_rebuild_parameter),
    ("torch", "Size"): _AllowedCall(tuple),
}


# Bounds any size, stride, offset or element count read from a file (2**48 elements is 1 PiB
# of float32): larger ones are damage, and would overflow numpy's 64-bit byte strides.
_MAX_COUNT = 2**48


# What reading a file may allocate for its arrays: this many times its size, or at least this.
_MEMORY_PER_FILE_BYTE = 8
_MEMORY_FLOOR = 2**26


def _is_count(value) -> bool:
    """A plain int in [0, _MAX_COUNT) (not a bool, float or string from a crafted pickle)."""
    return type(value) is int and 0 <= value < _MAX_COUNT


class _StateDictUnpickler(pickle.Unpickler):
    """Resolves only the globals of a state dict; storages become _StorageRef, each recorded
    in `storages` by key."""

    def __init__(self, file, path: str):
        super().__init__(file)
        self._path = path
        self.storages: dict[str, _StorageRef] = {}

    def find_class(self, module, name):
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        if (module, name) in _ALLOWED_GLOBALS:
            return _ALLOWED_GLOBALS[(module, name)]
        if module == "torch" and name.endswith("Storage") or module == "torch._utils":
            raise _RefusedGlobal(
                f"{self._path}: holds tensors of a kind this reader does not support "
                f"({module}.{name}); BERT weights are float32, float16 or bfloat16 tensors"
            )
        raise _RefusedGlobal(
            f"{self._path}: the pickle refers to {module}.{name}, which a file of weights (a "
            "state dict of tensors) does not need; it is not read, so that no code of the file "
            "runs. Save the model's state_dict() alone, or convert it to safetensors."
        )

    def persistent_load(self, pid):
        # zip layout: ('storage', type, key, location, numel);
        # legacy layout: the same and a view (None, or (view key, offset, size)).
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        storage_type, key, numel = pid[1], pid[2], pid[4]
        if not isinstance(storage_type, _StorageType) or storage_type.name not in _STORAGE_DTYPES:
            raise pickle.UnpicklingError(f"a storage of type {storage_type!r}")
        if type(key) is not str or not _is_count(numel):
            raise pickle.UnpicklingError(f"storage key {key!r} with {numel!r} elements")
        if len(pid) == 6 and pid[5] is not None:
            raise pickle.UnpicklingError(f"storage {key} is a view of another (an old layout)")
        ref = _StorageRef(key, _STORAGE_DTYPES[storage_type.name], numel)
        if self.storages.setdefault(key, ref) != ref:
            raise pickle.UnpicklingError(f"storage {key} described twice, differently")
        return ref


def _unpickle(file, path: str):
    """(the object, {key: _StorageRef} of every storage it points at) of the next pickle."""
    unpickler = _StateDictUnpickler(file, path)
    try:
        return unpickler.load(), unpickler.storages
    except _RefusedGlobal:
        raise
    except Exception as error:  # a damaged pickle fails in many ways (EOFError, KeyError, ...)
        raise ValueError(
            f"{path}: not a PyTorch state dict pickle ({type(error).__name__}: {error})"
        ) from None


def _byteorder(text: str, path: str) -> str:
    if text not in ("little", "big"):
        raise ValueError(f"{path}: byte order {text[:20]!r}, expected 'little' or 'big'")
    return text


def _read_zip_layout(path: str):
    """(the tensors, {storage key: its raw bytes}, byte order) of a zip-layout file."""
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pickles) != 1:
            raise ValueError(
                f"{path}: a zip file, but not one torch.save wrote (expected one data.pkl, "
                f"found {len(pickles)})"
            )
        prefix = pickles[0][: -len("data.pkl")]
        with archive.open(pickles[0]) as reader:
            state, refs = _unpickle(reader, path)
        tensors = _tensor_dict(state, path)
        byteorder = "little"
        if prefix + "byteorder" in names:
            raw_byteorder = archive.read(prefix + "byteorder")
            byteorder = _byteorder(raw_byteorder.decode("ascii", "replace").strip(), path)
        storages = {}
        for key in {tensor.storage.key for tensor in tensors.values()}:
            ref = refs[key]
            member = f"{prefix}data/{key}"
            if member not in names:
                raise ValueError(f"{path}: storage {key} ({member}) is missing")
            # torch.save stores storages uncompressed and whole: a member of another size is
            # damage (or a zip bomb), not weights.
            size = archive.getinfo(member).file_size
            if size != ref.numel * ref.dtype.itemsize:
                raise ValueError(
                    f"{path}: storage {key} ({member}) holds {size} bytes, its tensors "
                    f"{ref.numel * ref.dtype.itemsize}"
                )
            storages[key] = archive.read(member)
    return tensors, storages, byteorder


def _read_legacy_layout(path: str):
    """(the tensors, {storage key: its raw bytes}, byte order) of a legacy file."""
    file_size = os.path.getsize(path)
    with open(path, "rb") as reader:
        try:
            magic = _StateDictUnpickler(reader, path).load()
            version = _StateDictUnpickler(reader, path).load()
        except Exception:  # whatever stops reading two small numbers: not this layout
            magic = version = None
        if magic != _LEGACY_MAGIC_NUMBER or version != _LEGACY_PROTOCOL_VERSION:
            raise ValueError(
                f"{path}: not a PyTorch weights file (neither the zip layout of torch.save nor "
                "its legacy layout)"
            )
        system_info, _ = _unpickle(reader, path)
        little_endian = not isinstance(system_info, dict) or system_info.get("little_endian", True)
        byteorder = "little" if little_endian else "big"
        state, refs = _unpickle(reader, path)
        tensors = _tensor_dict(state, path)
        wanted = {tensor.storage.key for tensor in tensors.values()}
        keys, _ = _unpickle(reader, path)
        if not isinstance(keys, list) or not all(type(key) is str for key in keys):
            raise ValueError(f"{path}: the list of storages is {type(keys).__name__}")
        storages = {}
        # The storages follow in the order of `keys`, each its element count (int64) and bytes.
        for key in keys:
            if key not in refs:
                raise ValueError(f"{path}: storage {key} belongs to no tensor in the file")
            header = reader.read(8)
            if len(header) != 8:
                raise ValueError(f"{path}: cut short before storage {key}")
            numel = int.from_bytes(header, byteorder)
            nbytes = numel * refs[key].dtype.itemsize
            if numel != refs[key].numel or reader.tell() + nbytes > file_size:
                raise ValueError(
                    f"{path}: cut short in storage {key} (or damaged: {numel} elements where "
                    f"its tensors say {refs[key].numel}, {file_size - reader.tell()} bytes left)"
                )
            if key in wanted:
                storages[key] = reader.read(nbytes)
            else:
                reader.seek(nbytes, os.SEEK_CUR)
    return tensors, storages, byteorder


def _array_dtype(ref: _StorageRef) -> np.dtype:
    """The element type of the arrays read from `ref`: its own, bfloat16 widened to float32."""
    return np.dtype(np.float32) if ref.dtype == _BFLOAT16 else ref.dtype


def _check_view(name: str, tensor: _PendingTensor, path: str) -> None:
    """Raises a ValueError unless the tensor's offset, shape and strides (from the pickle, so
    anything) are plain ints whose view lies inside its storage: as_strided reads wherever the
    strides point."""
    offset, shape, strides = tensor.offset, tensor.shape, tensor.strides
    if not (
        _is_count(offset)
        and isinstance(shape, tuple)
        and isinstance(strides, tuple)
        and len(shape) == len(strides)
        and all(_is_count(value) for value in shape + strides)
    ):
        raise ValueError(
            f"{path}: tensor {name}: offset {offset!r}, shape {shape!r} and strides {strides!r} "
            "do not describe a view"
        )
    if 0 in shape:
        return
    last = offset + sum((size - 1) * step for size, step in zip(shape, strides, strict=True))
    if last >= tensor.storage.numel:
        raise ValueError(
            f"{path}: tensor {name}: shape {list(shape)} with strides {list(strides)} at offset "
            f"{offset} reaches past its storage of {tensor.storage.numel} elements"
        )


def _materialize(name: str, tensor: _PendingTensor, storages: dict, byteorder: str, path: str):
    """The values of a tensor that passed _check_view, as a new contiguous numpy array."""
    ref = tensor.storage
    if ref.key not in storages:
        raise ValueError(f"{path}: tensor {name}: its storage {ref.key} is not in the file")
    if 0 in tensor.shape:
        return np.zeros(tensor.shape, _array_dtype(ref))
    dtype = ref.dtype.newbyteorder("<" if byteorder == "little" else ">")
    storage = np.frombuffer(storages[ref.key], dtype=dtype, count=ref.numel)
    view = np.lib.stride_tricks.as_strided(
        storage[tensor.offset :],
        shape=tensor.shape,
        strides=[step * dtype.itemsize for step in tensor.strides],
        writeable=False,
    )
    # A copy either way: the file's bytes are freed.
    return np.array(view, dtype=_array_dtype(ref), order="C")


def _tensor_dict(state, path: str) -> dict:
    """The flat {name: _PendingTensor} of the file: the state dict itself, or the one under a
    "state_dict" or "model" key (as training checkpoints nest it). Entries that are not tensors
    are left out."""

    def tensors_of(value):
        if not isinstance(value, dict):
            return {}
        return {str(k): v for k, v in value.items() if isinstance(v, _PendingTensor)}

    tensors = tensors_of(state)
    if not tensors and isinstance(state, dict):
        for key in ("state_dict", "model"):
            tensors = tensors_of(state.get(key))
            if tensors:
                break
    if not tensors:
        raise ValueError(
            f"{path}: holds a {type(state).__name__}, not a state dict (a dict of tensors, or one "
            "under 'state_dict' or 'model')"
        )
    return tensors


def load_pytorch_state_dict(path: str) -> dict[str, np.ndarray]:
    """The tensors of a `torch.save`d state dict as numpy arrays, by name.

    Arrays keep their element type (float32, float16, int64, ...), except bfloat16, which is
    widened to float32. Entries that are not tensors are left out. Raises FileNotFoundError, or a
    ValueError naming the file and what is wrong with it (not torch.save's layout, a name outside
    a state dict in its pickle, a storage cut short).
    """
    if not is_file(path):
        raise FileNotFoundError(f"PyTorch weights file not found: {path}")
    with local_copy(path) as local:
        return _load_local_state_dict(local)


def _load_local_state_dict(path: str) -> dict[str, np.ndarray]:
    """load_pytorch_state_dict of a local file (read with open, seek and zipfile)."""
    with open(path, "rb") as reader:
        starts_as_zip = reader.read(4) == b"PK\x03\x04"
    if starts_as_zip:
        try:
            tensors, storages, byteorder = _read_zip_layout(path)
        except (
            zipfile.BadZipFile,
            zlib.error,
            EOFError,
            OSError,
            RuntimeError,
            UnicodeDecodeError,  # a damaged member name
        ) as error:
            raise ValueError(
                f"{path} ({os.path.getsize(path)} bytes): torch.save's zip layout, but damaged "
                f"or cut short ({type(error).__name__}: {error}); copy or download it again"
            ) from None
        except NotImplementedError as error:  # a compression method torch.save never uses
            raise ValueError(f"{path}: not a zip file torch.save wrote ({error})") from None
    else:
        tensors, storages, byteorder = _read_legacy_layout(path)
    for name, tensor in tensors.items():
        _check_view(name, tensor, path)
    # Views with more elements than their storage (broadcasts, stride 0) are copied out whole:
    # a small file could ask for any amount of memory. Tied weights and widened bfloat16 take
    # at most a few times the file's size.
    file_size = os.path.getsize(path)
    needed = sum(
        math.prod(tensor.shape) * _array_dtype(tensor.storage).itemsize
        for tensor in tensors.values()
    )
    if needed > max(_MEMORY_PER_FILE_BYTE * file_size, _MEMORY_FLOOR):
        raise ValueError(
            f"{path}: its tensors would take {needed} bytes from a file of {file_size} "
            "(broadcast views); save them with .contiguous()"
        )
    return {
        name: _materialize(name, tensor, storages, byteorder, path)
        for name, tensor in tensors.items()
    }
