"""A BERT model repository on the Hugging Face Hub, as `--init_checkpoint=hf://OWNER/NAME` (or
https://huggingface.co/OWNER/NAME, `hf://bert-base-uncased`, `hf://OWNER/NAME@REVISION`):
its files downloaded once into the cache (download_cache.py) and read as a local folder of the
`safetensors`, `pytorch` or `h5` layout, with its config, vocab and casing.

Files are fetched as the Hub serves them to every client, `{endpoint}/{repo}/resolve/{revision}/
{file}`, with urllib rather than the huggingface_hub library, which this project does not
otherwise need. `$HF_ENDPOINT` (a mirror) and `$HF_TOKEN` (gated or private repositories) are
honoured as huggingface_hub honours them. Taken: config.json (required), the weights (the first
of model.safetensors, the shards model.safetensors.index.json lists, pytorch_model.bin, its
shards, tf_model.h5), and vocab.txt and tokenizer_config.json where the repository has them.
"""

from __future__ import annotations

import functools
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request

from absl import logging

from official_bert.checkpoints.download_cache import (
    checkpoint_cache_dir,
    download,
    exclusive,
    open_url,
    publish_folder,
    remove_leftovers,
    source_folder,
    worth_resuming,
)
from official_bert.config import write_text_atomically
from official_bert.side_file_names import partial_path

_HUB_HOST = "huggingface.co"
# The weight files tried in order: (file, shard index or None).
_WEIGHT_FILES = (
    ("model.safetensors", "model.safetensors.index.json"),
    ("pytorch_model.bin", "pytorch_model.bin.index.json"),
    ("tf_model.h5", None),
)
_OPTIONAL_FILES = ("vocab.txt", "tokenizer_config.json")


def is_hugging_face_reference(path: str) -> bool:
    """`hf://...`, or an https URL of a repository on huggingface.co."""
    return path.startswith("hf://") or urllib.parse.urlsplit(path).netloc == _HUB_HOST


def _repository_and_revision(reference: str) -> tuple[str, str]:
    if reference.startswith("hf://"):
        name = reference[len("hf://") :]
    else:
        name = urllib.parse.unquote(urllib.parse.urlsplit(reference).path)
        # https://huggingface.co/OWNER/NAME/tree/REVISION, as a browser shows a revision.
        if "/tree/" in name:
            name, revision = name.split("/tree/", 1)
            name = f"{name}@{revision}"
    name = name.strip("/")
    name, _, revision = name.partition("@")
    parts = name.split("/")
    if not name or len(parts) > 2 or not all(parts):
        raise ValueError(
            f"{reference}: expected hf://OWNER/NAME (or hf://NAME, https://huggingface.co/OWNER/"
            "NAME), with @REVISION optional"
        )
    return name, revision or "main"


def hugging_face_repository(reference: str) -> str:
    """The local folder of the repository `reference` names at its current commit, downloaded
    when that commit is new here (a folder named as the repository, e.g. `bert-base-uncased`:
    the casing checks read the name).

    The Hub tells the commit a revision names (`X-Repo-Commit` of a HEAD request for its
    config.json); every file is then fetched at that commit, so a push to the repository while
    downloading cannot mix two versions, and the next use after a push downloads the new one.
    Without a connection, the copy of the commit last seen is used, with a warning. A revision
    that is a commit (40 hex digits) already here is used without asking. A server that tells
    no commit (some mirrors) is cached by revision name, and not asked again.

    Raises:
      FileNotFoundError: the repository (or revision) does not exist, or holds no config.json
        or no BERT weights of a layout read here.
      ValueError: another architecture than BERT (config.json's model_type), found before its
        weights are downloaded.
      OSError: no connection and no copy here, or a download cut short.
    """
    repository, revision = _repository_and_revision(reference)
    endpoint = os.environ.get("HF_ENDPOINT", f"https://{_HUB_HOST}").rstrip("/")
    name = repository.split("/")[-1].lstrip(".") or "model"
    headers = (
        {"Authorization": f"Bearer {os.environ['HF_TOKEN']}"} if "HF_TOKEN" in os.environ else {}
    )
    if re.fullmatch(r"[0-9a-f]{40}", revision):  # a commit: its files never change
        pinned = os.path.join(source_folder(f"{endpoint}/{repository}@{revision}"), name)
        if os.path.isdir(pinned):
            return pinned  # no question to the Hub (offline too)
    revision_base = f"{endpoint}/{repository}/resolve/{urllib.parse.quote(revision, safe='')}"
    record = os.path.join(source_folder(revision_base), "commit")
    try:
        commit = _current_commit(reference, revision_base, headers)
    except FileNotFoundError:
        raise
    except OSError as error:
        commit = _read_text(record)
        folder = commit and os.path.join(source_folder(f"{endpoint}/{repository}@{commit}"), name)
        if not folder or not os.path.isdir(folder):
            # Raised here, not urllib's URLError from deep in urllib: the scripts print an
            # OSError of the library as one line.
            cause = error.reason if isinstance(error, urllib.error.URLError) else error
            raise OSError(
                f"{reference}: the Hugging Face Hub ({endpoint}) cannot be reached ({cause}) "
                f"and no copy of it is in the download cache {checkpoint_cache_dir()}; connect "
                "(or set $HF_ENDPOINT to a mirror), or pass a local folder of the repository"
            ) from error
        logging.warning(
            "%s: the Hub cannot be reached (%s); using the copy of commit %s",
            reference,
            error,
            commit,
        )
        return folder
    source = f"{endpoint}/{repository}@{commit}" if commit else revision_base
    folder = os.path.join(source_folder(source), name)
    if not os.path.isdir(folder):
        with exclusive(folder):
            if not os.path.isdir(folder):  # else another run made it while this one waited
                base = f"{endpoint}/{repository}/resolve/{commit}" if commit else revision_base
                _download_repository(reference, base, folder, headers, resume=bool(commit))
    if commit and _read_text(record) != commit:
        write_text_atomically(record, commit)
    return folder


def _current_commit(reference: str, revision_base: str, headers: dict) -> str | None:
    """The commit the revision names now, as the Hub tells it; None where it tells none.

    Raises:
      FileNotFoundError: the repository or revision is not there (or not readable without a
        token).
      OSError: the Hub cannot be reached.
    """
    url = f"{revision_base}/config.json"
    request = urllib.request.Request(url, headers=headers, method="HEAD")
    try:
        with open_url(request, timeout=30) as response:
            commit = response.headers.get("X-Repo-Commit")
    except urllib.error.HTTPError as error:
        if error.code >= 500:  # the Hub's trouble, not an answer: the last copy may serve
            raise OSError(f"HTTP {error.code} for {url}") from None
        raise _not_there(reference, url, "config.json", error.code) from None
    return commit if commit and re.fullmatch(r"[0-9a-f]{40}", commit) else None


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as reader:
            return reader.read().strip() or None
    except OSError:
        return None


def _download_repository(
    reference: str, base: str, folder: str, headers: dict, resume: bool
) -> None:
    """Downloads the repository's files at `base` into `folder`, which appears only whole.

    The files gather in `.NAME.partial` beside it, kept when the download is cut short or
    killed: with `resume` (`base` names a commit, so its files never change), the next run takes
    the files there as they are and goes on with the one that was cut short; without it (a
    revision whose files may have changed since), it starts over.
    """
    writing = partial_path(folder)
    if not resume:
        remove_leftovers(writing)
    os.makedirs(writing, exist_ok=True)
    fetch = functools.partial(_fetch, reference, base, writing, headers)
    try:
        fetch("config.json", required=True)
        _check_is_bert(os.path.join(writing, "config.json"), reference)
        weights = _fetch_weights(fetch, writing, reference)
        for file in _OPTIONAL_FILES:
            fetch(file, required=False)
        publish_folder(writing, folder)
    except BaseException as error:
        if not worth_resuming(error):
            remove_leftovers(writing)
        raise
    logging.info("Downloaded %s (%s) into %s", reference, weights, folder)


def _not_there(reference: str, url: str, name: str, code: int) -> FileNotFoundError:
    what = "found" if code == 404 else f"readable (HTTP {code})"
    token = "; a gated or private repository needs HF_TOKEN" if code in (401, 403) else ""
    return FileNotFoundError(f"{reference}: {name} not {what} at {url}{token}")


def _fetch(
    reference: str, base: str, folder: str, headers: dict, name: str, required: bool
) -> bool:
    """Downloads the file `name` of the repository into `folder` (unless an earlier run did);
    False where the repository has no such file and it is not `required`."""
    if os.path.isfile(os.path.join(folder, name)):
        return True
    try:
        download(f"{base}/{name}", os.path.join(folder, name), headers)
        return True
    except urllib.error.HTTPError as error:
        if error.code == 404 and not required:
            return False
        raise _not_there(reference, f"{base}/{name}", name, error.code) from None


def _check_is_bert(config_file: str, reference: str) -> None:
    """Refuses another architecture before its weights are downloaded (they may be gigabytes)."""
    try:
        with open(config_file, encoding="utf-8") as reader:
            model_type = json.load(reader).get("model_type", "bert")
    except (ValueError, AttributeError) as error:
        raise ValueError(f"{reference}: config.json is not a JSON object ({error})") from None
    if model_type != "bert":
        raise ValueError(
            f"{reference}: a {model_type!r} model (config.json's model_type), not BERT; its "
            "weights were not downloaded"
        )


def _fetch_weights(fetch, folder: str, reference: str) -> str:
    """Downloads the repository's first weight layout (_WEIGHT_FILES); returns what it took."""
    tried = []
    for single, index in _WEIGHT_FILES:
        if fetch(single, required=False):
            return single
        tried.append(single)
        if index is None:
            continue
        if fetch(index, required=False):
            with open(os.path.join(folder, index), encoding="utf-8") as reader:
                try:
                    shards = sorted(set(json.load(reader)["weight_map"].values()))
                except (ValueError, KeyError, TypeError, AttributeError) as error:
                    raise ValueError(
                        f"{reference}: {index} is not a shard index ({error})"
                    ) from None
            for shard in shards:
                if os.path.basename(shard) != shard or shard in ("", ".", ".."):
                    raise ValueError(f"{reference}: {index} names {shard!r}, not a file beside it")
                fetch(shard, required=True)
            return f"{index}, {len(shards)} shards"
        tried.append(index)
    raise FileNotFoundError(
        f"{reference}: no BERT weights read here ({', '.join(tried)} not in the repository; "
        "Flax-only repositories are not read)"
    )
