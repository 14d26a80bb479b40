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
Hand-written because neither TensorFlow nor safetensors reads this format.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import pickle
import zipfile

import ml_dtypes
import numpy as np

# torch's typed storage class names (still what torch.save pickles) -> numpy element types.
_STORAGE_DTYPES = {
    "FloatStorage": np.dtype(np.float32),
    "DoubleStorage": np.dtype(np.float64),
    "HalfStorage": np.dtype(np.float16),
    "BFloat16Storage": np.dtype(ml_dtypes.bfloat16),
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


@dataclasses.dataclass(frozen=True)
class _StorageType:
    """What the pickle's `torch.<X>Storage` global resolves to: the element type."""

    name: str
    dtype: np.dtype


@dataclasses.dataclass(frozen=True)
class _StorageRef:
    """A storage the pickle points at: its key in the file, element type and length."""

    key: str
    dtype: np.dtype
    numel: int


@dataclasses.dataclass(frozen=True)
class _PendingTensor:
    """A tensor the pickle describes (a strided view of a storage), read once storages are."""

    storage: _StorageRef
    offset: int
    shape: tuple
    strides: tuple


def _rebuild_tensor(storage, storage_offset, size, stride, *unused_state):
    # torch._utils._rebuild_tensor / _rebuild_tensor_v2(storage, offset, size, stride,
    # requires_grad, backward_hooks[, metadata]): only the view matters here.
    if not isinstance(storage, _StorageRef):
        raise pickle.UnpicklingError(f"a tensor whose storage is {type(storage).__name__}")
    return _PendingTensor(storage, int(storage_offset), tuple(size), tuple(stride))


def _rebuild_parameter(data, *unused_state):
    # torch._utils._rebuild_parameter(data, requires_grad, backward_hooks[, state]): the tensor.
    return data


_ALLOWED_GLOBALS = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch", "Size"): tuple,
}


class _StateDictUnpickler(pickle.Unpickler):
    """Resolves only the globals of a state dict; storages become _StorageRef."""

    def __init__(self, file, path: str):
        super().__init__(file)
        self._path = path

    def find_class(self, module, name):
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name, _STORAGE_DTYPES[name])
        if (module, name) in _ALLOWED_GLOBALS:
            return _ALLOWED_GLOBALS[(module, name)]
        raise ValueError(
            f"{self._path}: the pickle refers to {module}.{name}, which a file of weights (a "
            "state dict of tensors) does not need; it is not read, so that no code of the file "
            "runs. Save the model's state_dict() alone, or convert it to safetensors."
        )

    def persistent_load(self, pid):
        # zip layout: ('storage', type, key, location, numel);
        # legacy layout: the same and a view (None, or (view key, offset, size)).
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        storage_type, key, numel = pid[1], str(pid[2]), int(pid[4])
        if not isinstance(storage_type, _StorageType):
            raise pickle.UnpicklingError(f"storage {key} of type {storage_type!r}")
        if len(pid) == 6 and pid[5] is not None:
            raise pickle.UnpicklingError(f"storage {key} is a view of another (an old layout)")
        return _StorageRef(key, storage_type.dtype, numel)


def _unpickle(file, path: str):
    try:
        return _StateDictUnpickler(file, path).load()
    except ValueError:
        raise  # find_class's refusal, which names the global
    except Exception as error:  # a damaged pickle fails in many ways (EOFError, KeyError, ...)
        raise ValueError(
            f"{path}: not a PyTorch state dict pickle ({type(error).__name__}: {error})"
        ) from None


def _read_zip_layout(path: str):
    """(the unpickled object, {storage key: its raw bytes}, byte order) of a zip-layout file."""
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
            state = _unpickle(reader, path)
        byteorder = "little"
        if prefix + "byteorder" in names:
            byteorder = archive.read(prefix + "byteorder").decode("ascii").strip()
        storages = {}
        for ref in _storage_refs(state):
            if ref.key in storages:
                continue  # several tensors view one storage
            member = f"{prefix}data/{ref.key}"
            if member not in names:
                raise ValueError(f"{path}: storage {ref.key} ({member}) is missing")
            storages[ref.key] = archive.read(member)
    return state, storages, byteorder


def _read_legacy_layout(path: str):
    """(the unpickled object, {storage key: its raw bytes}, byte order) of a legacy file."""
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
        system_info = _unpickle(reader, path)
        little_endian = not isinstance(system_info, dict) or system_info.get("little_endian", True)
        byteorder = "little" if little_endian else "big"
        state = _unpickle(reader, path)
        keys = _unpickle(reader, path)
        refs = {ref.key: ref for ref in _storage_refs(state)}
        storages = {}
        for key in keys:
            header = reader.read(8)
            if len(header) != 8:
                raise ValueError(f"{path}: cut short before storage {key}")
            if key not in refs:
                raise ValueError(f"{path}: storage {key} belongs to no tensor of a state dict")
            numel = int.from_bytes(header, byteorder)
            nbytes = numel * refs[key].dtype.itemsize
            raw = reader.read(nbytes)
            if len(raw) != nbytes:
                raise ValueError(
                    f"{path}: cut short in storage {key} ({len(raw)} of {nbytes} bytes)"
                )
            storages[key] = raw
    return state, storages, byteorder


def _storage_refs(state):
    """Every _StorageRef the unpickled object's tensors point at."""
    if isinstance(state, _PendingTensor):
        yield state.storage
    elif isinstance(state, dict):
        for value in state.values():
            yield from _storage_refs(value)
    elif isinstance(state, (list, tuple)):
        for value in state:
            yield from _storage_refs(value)


def _materialize(name: str, tensor: _PendingTensor, storages: dict, byteorder: str, path: str):
    """The tensor's values as a contiguous numpy array (bfloat16 widened to float32)."""
    ref = tensor.storage
    if ref.key not in storages:
        raise ValueError(f"{path}: tensor {name}: its storage {ref.key} is not in the file")
    dtype = ref.dtype.newbyteorder("<" if byteorder == "little" else ">")
    raw = storages[ref.key]
    if len(raw) < ref.numel * dtype.itemsize:
        raise ValueError(f"{path}: tensor {name}: storage {ref.key} is cut short")
    storage = np.frombuffer(raw, dtype=dtype, count=ref.numel)
    # The view must lie inside its storage: as_strided reads wherever the strides point.
    shape, strides = tensor.shape, tensor.strides
    if len(shape) != len(strides) or min(shape + strides, default=0) < 0:
        raise ValueError(
            f"{path}: tensor {name}: shape {list(shape)} and strides {list(strides)} do not "
            "describe a view"
        )
    if 0 not in shape:
        last = tensor.offset + sum((s - 1) * step for s, step in zip(shape, strides, strict=True))
        if tensor.offset < 0 or last >= ref.numel:
            raise ValueError(
                f"{path}: tensor {name}: shape {list(tensor.shape)} with strides "
                f"{list(tensor.strides)} at offset {tensor.offset} reaches past its storage of "
                f"{ref.numel} elements"
            )
        view = np.lib.stride_tricks.as_strided(
            storage[tensor.offset :],
            shape=tensor.shape,
            strides=[step * dtype.itemsize for step in tensor.strides],
            writeable=False,
        )
    else:
        view = np.zeros(tensor.shape, dtype)
    if ref.dtype == np.dtype(ml_dtypes.bfloat16):
        return view.astype(np.float32)
    return np.array(view, dtype=ref.dtype, order="C")  # a copy: the file's bytes are freed


def _tensor_dict(state, path: str) -> dict:
    """The flat {name: _PendingTensor} of the file: the state dict itself, or the one under a
    "state_dict" or "model" key (as training checkpoints nest it)."""

    def is_tensor_dict(value):
        return isinstance(value, dict) and any(
            isinstance(v, _PendingTensor) for v in value.values()
        )

    if is_tensor_dict(state):
        return state
    if isinstance(state, dict):
        for key in ("state_dict", "model"):
            if is_tensor_dict(state.get(key)):
                return state[key]
    raise ValueError(
        f"{path}: holds a {type(state).__name__}, not a state dict (a dict of tensors, or one "
        "under 'state_dict' or 'model')"
    )


def load_pytorch_state_dict(path: str) -> dict[str, np.ndarray]:
    """The tensors of a `torch.save`d state dict as numpy arrays, by name.

    Arrays keep their element type (float32, float16, int64, ...), except bfloat16, which is
    widened to float32. Entries that are not tensors are left out. Raises FileNotFoundError, or a
    ValueError naming the file and what is wrong with it (not torch.save's layout, a name outside
    a state dict in its pickle, a storage cut short).
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"PyTorch weights file not found: {path}")
    with open(path, "rb") as reader:
        starts_as_zip = reader.read(4) == b"PK\x03\x04"
    if starts_as_zip:
        try:
            state, storages, byteorder = _read_zip_layout(path)
        except (zipfile.BadZipFile, EOFError) as error:
            raise ValueError(
                f"{path} ({os.path.getsize(path)} bytes): torch.save's zip layout, but damaged "
                f"or cut short ({error}); copy or download it again"
            ) from None
    else:
        state, storages, byteorder = _read_legacy_layout(path)
    tensors = _tensor_dict(state, path)
    return {
        str(name): _materialize(str(name), tensor, storages, byteorder, path)
        for name, tensor in tensors.items()
        if isinstance(tensor, _PendingTensor)
    }
