"""Weights named by an http(s) URL, as `--init_checkpoint` (and the other checkpoint flags) take
them: downloaded once into a cache, then read as a local folder.

- An archive (`.zip`, `.tar.gz`, `.tgz`, `.tar`), such as the original release's
  https://storage.googleapis.com/bert_models/2020_02_20/uncased_L-12_H-768_A-12.zip: unpacked
  into the cache, in a folder named as the archive (`uncased_L-12_H-768_A-12`: the casing
  checks read the name); the checkpoint is that folder, or the one folder inside it
  (bert_model.ckpt, bert_config.json and vocab.txt, which the scripts then find beside it).
- Any other URL is a TF Hub handle (tfhub.dev, Kaggle): tensorflow_hub downloads it into
  TFHUB_CACHE_DIR (export/hub_handle.py), a TF1 module or a TF2 encoder folder.

The cache is `$OFFICIAL_BERT_CACHE`, else `~/.cache/official_bert`, one folder per URL. The
download and the unpacking are written by hand rather than with keras.utils.get_file, which
writes the archive under its final name as it downloads (a killed download would be taken for
a whole one the next time) and unpacks it again at every call: here both go to temporary names
that are renamed when complete, so a run that is killed leaves nothing that a later one reads.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import urllib.parse
import urllib.request

from absl import logging

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")
_CHUNK_BYTES = 1 << 20
_PROGRESS_SECONDS = 10.0


def is_url(path: str | None) -> bool:
    """Whether `path` is an http(s) URL."""
    return bool(path) and str(path).startswith(("http://", "https://"))


def checkpoint_cache_dir() -> str:
    """Where downloaded checkpoints are kept: $OFFICIAL_BERT_CACHE, else ~/.cache/official_bert."""
    return os.environ.get("OFFICIAL_BERT_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "official_bert"
    )


def resolve_checkpoint_url(path: str | None) -> str | None:
    """The local folder of the weights a URL names (downloaded on first use); anything that is
    not an http(s) URL is returned as it is."""
    if not is_url(path):
        return path
    if urllib.parse.urlsplit(path).path.endswith(ARCHIVE_SUFFIXES):
        return _unpacked_archive(path)
    from official_bert.export.hub_handle import resolve_hub_handle

    return resolve_hub_handle(path)


def _unpacked_archive(url: str) -> str:
    name = os.path.basename(urllib.parse.urlsplit(url).path)
    suffix = next(s for s in ARCHIVE_SUFFIXES if name.endswith(s))
    folder = os.path.join(
        checkpoint_cache_dir(), hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    )
    stem = name[: -len(suffix)].lstrip(".") or "unpacked"
    unpacked = os.path.join(folder, stem)
    if not os.path.isdir(unpacked):
        os.makedirs(folder, exist_ok=True)
        archive = os.path.join(folder, f".download.tmp-{os.getpid()}{suffix}")
        unpacking = os.path.join(folder, f".{stem}.tmp-{os.getpid()}")
        try:
            _download(url, archive)
            _unpack(archive, unpacking, url)
            try:
                os.rename(unpacking, unpacked)
            except OSError:
                if not os.path.isdir(unpacked):  # not a run beside this one that got there first
                    raise
        finally:
            for leftover in (archive, unpacking):
                if os.path.isdir(leftover):
                    shutil.rmtree(leftover, ignore_errors=True)
                elif os.path.exists(leftover):
                    os.remove(leftover)
        logging.info("Unpacked %s into %s", url, unpacked)
    return _inner_folder(unpacked)


def _download(url: str, target: str) -> None:
    """Writes the body of `url` to `target`, logging progress (bytes, rate, ETA) as it goes."""
    started = last_report = time.monotonic()
    written = 0
    try:
        response = urllib.request.urlopen(url, timeout=60)
    except OSError as error:
        raise OSError(f"cannot download {url}: {error}") from None
    with response, open(target, "wb") as writer:
        total = int(response.headers.get("Content-Length") or 0)
        logging.info(
            "Downloading %s (%s)", url, f"{total / 1e6:.1f} MB" if total else "size unknown"
        )
        while chunk := response.read(_CHUNK_BYTES):
            writer.write(chunk)
            written += len(chunk)
            now = time.monotonic()
            if now - last_report >= _PROGRESS_SECONDS:
                last_report = now
                rate = written / (now - started)
                eta = f", ETA {(total - written) / rate:.0f} s" if total and rate else ""
                logging.info("  %.1f MB, %.1f MB/s%s", written / 1e6, rate / 1e6, eta)
    if total and written != total:
        raise OSError(f"download of {url} cut short: {written} of {total} bytes")


def _unpack(archive: str, destination: str, url: str) -> None:
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
    (the original release's zips hold `uncased_L-12_H-768_A-12/`)."""
    while True:
        entries = os.listdir(folder)
        if len(entries) != 1 or not os.path.isdir(os.path.join(folder, entries[0])):
            return folder
        folder = os.path.join(folder, entries[0])
