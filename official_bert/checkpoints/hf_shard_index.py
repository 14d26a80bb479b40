"""The shard index Hugging Face writes beside weights split into several files
(`model.safetensors.index.json`, `pytorch_model.bin.index.json`): {"weight_map": {tensor name:
shard file name}} and optional "metadata"."""

from __future__ import annotations

import json
import os


def weight_files(path: str, single_name: str, index_name: str, what: str) -> list[str]:
    """The files that hold the weights at `path`: the file itself; or in the directory `path`,
    `single_name`, else the shards its `index_name` lists (each once, in the index's order).

    what: the kind of weights, for messages ("safetensors", "PyTorch weights").
    Raises FileNotFoundError naming what is missing, or ValueError for an unreadable index.
    """
    if not os.path.isdir(path):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{what} file not found: {path}")
        return [path]
    single = os.path.join(path, single_name)
    if os.path.isfile(single):
        return [single]
    index = os.path.join(path, index_name)
    if not os.path.isfile(index):
        raise FileNotFoundError(f"{path}: neither {single_name} nor {index_name}")
    with open(index, encoding="utf-8") as reader:
        try:
            weight_map = json.load(reader)["weight_map"]
            items = list(weight_map.items())
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(
                f"{index}: expected JSON with a 'weight_map' of tensor name -> shard file "
                f"({type(error).__name__}: {error})"
            ) from None
    shards = []
    for name, shard in items:
        shard_path = os.path.join(path, str(shard))
        if not os.path.isfile(shard_path):
            raise FileNotFoundError(f"{index}: {name} is in {shard}, which is not in {path}")
        if shard_path not in shards:
            shards.append(shard_path)
    return shards
