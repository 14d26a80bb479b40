"""Weights named by a URL, as `--init_checkpoint` (and the other checkpoint flags) take them:
downloaded once into the cache (download_cache.py), then read as a local folder.

- An archive (`.zip`, `.tar.gz`, `.tgz`, `.tar`), such as the original release's
  https://storage.googleapis.com/bert_models/2020_02_20/uncased_L-12_H-768_A-12.zip: unpacked
  into the cache, in a folder named as the archive (`uncased_L-12_H-768_A-12`: the casing
  checks read the name); the checkpoint is that folder, or the one folder inside it
  (bert_model.ckpt, bert_config.json and vocab.txt, which the scripts then find beside it).
- A Hugging Face model repository, `hf://OWNER/NAME` or https://huggingface.co/OWNER/NAME:
  its config, weights and tokenizer files (hugging_face_hub.py).
- Any other http(s) URL is a TF Hub handle (tfhub.dev, Kaggle): tensorflow_hub downloads it into
  TFHUB_CACHE_DIR (export/hub_handle.py), a TF1 module or a TF2 encoder folder.
"""

from __future__ import annotations

import os
import shutil
import urllib.parse

from absl import logging

from official_bert.checkpoints.download_cache import (
    download,
    exclusive,
    publish_folder,
    remove_leftovers,
    source_folder,
)
from official_bert.checkpoints.hugging_face_hub import (
    hugging_face_repository,
    is_hugging_face_reference,
)
from official_bert.side_file_names import temporary_path

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")


def is_url(path: str | None) -> bool:
    """Whether `path` names weights to download: an http(s) URL or an `hf://` repository."""
    return bool(path) and str(path).startswith(("http://", "https://", "hf://"))


def resolve_checkpoint_url(path: str | None) -> str | None:
    """The local folder of the weights a URL names (downloaded on first use); anything that is
    not a URL (is_url) is returned as it is."""
    if not is_url(path):
        return path
    if urllib.parse.urlsplit(path).path.endswith(ARCHIVE_SUFFIXES):
        return _unpacked_archive(path)
    if is_hugging_face_reference(path):
        return hugging_face_repository(path)
    from official_bert.export.hub_handle import resolve_hub_handle

    return resolve_hub_handle(path)


def _unpacked_archive(url: str) -> str:
    name = os.path.basename(urllib.parse.urlsplit(url).path)
    suffix = next(s for s in ARCHIVE_SUFFIXES if name.endswith(s))
    stem = name[: -len(suffix)].lstrip(".") or "unpacked"
    unpacked = os.path.join(source_folder(url), stem)
    if os.path.isdir(unpacked):
        return _inner_folder(unpacked)
    with exclusive(unpacked):
        if not os.path.isdir(unpacked):  # else another run made it while this one waited
            archive = os.path.join(os.path.dirname(unpacked), f".{stem}{suffix}")
            unpacking = temporary_path(unpacked)
            try:
                if not os.path.isfile(archive):  # whole where a run stopped before unpacking
                    download(url, archive)  # what arrived is kept where cut short
                _unpack(archive, unpacking, url)
                publish_folder(unpacking, unpacked)
            finally:
                remove_leftovers(archive, unpacking)
            logging.info("Unpacked %s into %s", url, unpacked)
    return _inner_folder(unpacked)


def _unpack(archive: str, destination: str, url: str) -> None:
    logging.info("Unpacking %s (%.1f MB)", url, os.path.getsize(archive) / 1e6)
    try:
        try:
            # "data": no member outside the folder, no links out of it, no device files.
            shutil.unpack_archive(archive, destination, filter="data")
        except TypeError:  # a Python without extraction filters (before 3.10.12 / 3.11.4)
            shutil.unpack_archive(archive, destination)
    except (shutil.ReadError, ValueError, OSError, EOFError) as error:
        raise ValueError(
            f"{url}: not a readable archive ({type(error).__name__}: {error})"
        ) from None


def _inner_folder(folder: str) -> str:
    """`folder`, or the folder inside it while it holds exactly one entry and that is a folder
    (the original release's 2018 zips hold `uncased_L-12_H-768_A-12/`)."""
    while True:
        entries = os.listdir(folder)
        if len(entries) != 1 or not os.path.isdir(os.path.join(folder, entries[0])):
            return folder
        folder = os.path.join(folder, entries[0])
