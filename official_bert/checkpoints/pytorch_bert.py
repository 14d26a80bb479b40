"""BERT weights with Hugging Face names in PyTorch files (`pytorch_model.bin`, or its shards
listed by `pytorch_model.bin.index.json`), read without PyTorch."""

from __future__ import annotations

import numpy as np

from official_bert.checkpoints.hf_shard_index import (
    describe_weight_files,
    load_shards,
    weight_files,
)
from official_bert.checkpoints.pytorch_state_dict import load_pytorch_state_dict
from official_bert.checkpoints.safetensors_bert import read_hf_named_weights

WEIGHTS_NAME = "pytorch_model.bin"
INDEX_NAME = "pytorch_model.bin.index.json"
# What a single PyTorch weights file is called where it is not pytorch_model.bin.
FILE_SUFFIXES = (".bin", ".pt", ".pth")


def pytorch_weight_files(path: str) -> list[tuple[str, frozenset[str] | None]]:
    """The files that hold the weights at `path` (hf_shard_index.weight_files): the file itself,
    or in the directory `path` pytorch_model.bin, else the shards its index lists."""
    return weight_files(path, WEIGHTS_NAME, INDEX_NAME, "PyTorch weights")


def load_pytorch_arrays(path: str) -> dict[str, np.ndarray]:
    """Every tensor of the PyTorch weights at `path` (a file, or a directory as above)."""
    return load_shards(pytorch_weight_files(path), load_pytorch_state_dict)


def read_pytorch_checkpoint(path: str, model, require_heads: bool = False) -> int:
    """Loads HF-named BERT weights from PyTorch files at `path` into `model`, as
    read_safetensors_checkpoint does from safetensors; returns the number of variables loaded."""
    files = pytorch_weight_files(path)
    return read_hf_named_weights(
        load_shards(files, load_pytorch_state_dict),
        model,
        describe_weight_files(files, path, "PyTorch weights", "PyTorch shards"),
        require_heads,
    )
