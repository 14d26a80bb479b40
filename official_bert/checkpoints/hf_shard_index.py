"""The shard index Hugging Face writes beside weights split into several files
(`model.safetensors.index.json`, `pytorch_model.bin.index.json`): {"weight_map": {tensor name:
shard file name}} and optional "metadata"."""

from __future__ import annotations

import json
import os

import tensorflow as tf

from official_bert.file_system import is_file


def weight_files(
    path: str, single_name: str, index_name: str, what: str
) -> list[tuple[str, frozenset[str] | None]]:
    """The files that hold the weights at `path`, each with the tensor names to take from it
    (None: all): the file itself; or in the directory `path`, `single_name`, else the shards its
    `index_name` lists (each once, in the index's order, with the names the index puts there).

    what: the kind of weights, for messages ("safetensors", "PyTorch weights").
    Raises FileNotFoundError naming what is missing, or ValueError for an unreadable index.
    """
    if not tf.io.gfile.isdir(path):
        if not is_file(path):
            raise FileNotFoundError(f"{what} file not found: {path}")
        return [(path, None)]
    single = os.path.join(path, single_name)
    if is_file(single):
        return [(single, None)]
    index = os.path.join(path, index_name)
    if not is_file(index):
        raise FileNotFoundError(f"{path}: neither {single_name} nor {index_name}")
    with tf.io.gfile.GFile(index, "r") as reader:
        try:
            items = list(json.load(reader)["weight_map"].items())
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(
                f"{index}: expected JSON with a 'weight_map' of tensor name -> shard file "
                f"({type(e).__name__}: {e})"
            ) from None
    names_by_shard: dict[str, set[str]] = {}
    for name, shard in items:
        # Shards sit beside their index: a path elsewhere is damage, or a trap.
        if (
            not isinstance(shard, str)
            or os.path.basename(shard) != shard
            or shard in ("", ".", "..")
        ):
            raise ValueError(f"{index}: {name} is in {shard!r}, not a file name beside the index")
        shard_path = os.path.join(path, shard)
        if not is_file(shard_path):
            raise FileNotFoundError(f"{index}: {name} is in {shard}, which is not in {path}")
        names_by_shard.setdefault(shard_path, set()).add(name)
    return [(shard, frozenset(names)) for shard, names in names_by_shard.items()]


def load_shards(files: list[tuple[str, frozenset[str] | None]], load_file) -> dict:
    """{name: array} of `files` (as weight_files returns them), each read by load_file(file)
    and keeping the names listed for it."""
    arrays = {}
    for file, names in files:
        arrays.update(
            (name, value)
            for name, value in load_file(file).items()
            if names is None or name in names
        )
    return arrays


def describe_weight_files(
    files: list[tuple[str, frozenset[str] | None]], path: str, file_label: str, shards_label: str
) -> str:
    """What `files` (from weight_files(path, ...)) are, for messages: "FILE_LABEL F" for one
    file, "SHARDS_LABEL in PATH" for several."""
    return f"{file_label} {files[0][0]}" if len(files) == 1 else f"{shards_label} in {path}"
