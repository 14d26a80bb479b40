"""BERT weights with Hugging Face names in PyTorch files (`pytorch_model.bin`, or its shards
listed by `pytorch_model.bin.index.json`), read without PyTorch."""

from __future__ import annotations

import json
import os

import numpy as np

from official_bert.checkpoints.pytorch_state_dict import load_pytorch_state_dict
from official_bert.checkpoints.safetensors_bert import read_hf_named_weights

WEIGHTS_NAME = "pytorch_model.bin"
INDEX_NAME = "pytorch_model.bin.index.json"
# What a single PyTorch weights file is called where it is not pytorch_model.bin.
FILE_SUFFIXES = (".bin", ".pt", ".pth")


def pytorch_weight_files(path: str) -> list[str]:
    """The files that hold the weights at `path`: the file itself, or in the directory `path`
    pytorch_model.bin, else the shards its pytorch_model.bin.index.json lists."""
    if not os.path.isdir(path):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"PyTorch weights file not found: {path}")
        return [path]
    single = os.path.join(path, WEIGHTS_NAME)
    if os.path.isfile(single):
        return [single]
    index = os.path.join(path, INDEX_NAME)
    if not os.path.isfile(index):
        raise FileNotFoundError(f"{path}: neither {WEIGHTS_NAME} nor {INDEX_NAME}")
    with open(index, encoding="utf-8") as reader:
        try:
            weight_map = json.load(reader)["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ValueError(
                f"{index}: expected JSON with a 'weight_map' of tensor name -> shard file "
                f"({type(error).__name__}: {error})"
            ) from None
    shards = []
    for name, shard in weight_map.items():
        shard_path = os.path.join(path, shard)
        if not os.path.isfile(shard_path):
            raise FileNotFoundError(f"{index}: {name} is in {shard}, which is not in {path}")
        if shard_path not in shards:
            shards.append(shard_path)
    return shards


def load_pytorch_arrays(path: str) -> dict[str, np.ndarray]:
    """Every tensor of the PyTorch weights at `path` (a file, or a directory as above)."""
    arrays = {}
    for file in pytorch_weight_files(path):
        arrays.update(load_pytorch_state_dict(file))
    return arrays


def read_pytorch_checkpoint(path: str, model, require_heads: bool = False) -> int:
    """Loads HF-named BERT weights from PyTorch files at `path` into `model`, as
    read_safetensors_checkpoint does from safetensors; returns the number of variables loaded."""
    files = pytorch_weight_files(path)
    source = f"PyTorch weights {files[0] if len(files) == 1 else path}"
    return read_hf_named_weights(load_pytorch_arrays(path), model, source, require_heads)
