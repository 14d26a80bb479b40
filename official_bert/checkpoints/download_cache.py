"""The cache of downloaded checkpoints: where they go, how a file is downloaded, how a folder
becomes visible only once whole.

The cache is `$OFFICIAL_BERT_CACHE`, else `~/.cache/official_bert`, one folder per source (a
hash of its URL). Everything is written under a temporary name (`.NAME.tmp-PID`,
side_file_names.temporary_path) and renamed
when complete, so a run that is killed leaves nothing that a later one reads; written by hand
rather than with keras.utils.get_file, which downloads under the final name (a killed download
would be taken for a whole one the next time) and unpacks again at every call.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import shutil
import time
import urllib.error
import urllib.request

from absl import logging

_TEMPORARY = re.compile(r"\..+\.tmp-(\d+)(\..+)?")
_CHUNK_BYTES = 1 << 20
_ATTEMPTS = 3
_RETRY_SECONDS = 2.0
_PROGRESS_SECONDS = 10.0


def checkpoint_cache_dir() -> str:
    """Where downloaded checkpoints are kept: $OFFICIAL_BERT_CACHE, else ~/.cache/official_bert."""
    return os.environ.get("OFFICIAL_BERT_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "official_bert"
    )


def source_folder(source: str) -> str:
    """The cache folder of one source (a URL, a repository and revision), made if missing;
    what killed downloads left there is removed (remove_stale_temporaries)."""
    folder = os.path.join(
        checkpoint_cache_dir(), hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]
    )
    os.makedirs(folder, exist_ok=True)
    remove_stale_temporaries(folder)
    return folder


def remove_stale_temporaries(folder: str) -> None:
    """Removes the temporary names in `folder` (side_file_names.temporary_path's `.NAME.tmp-PID`, an archive's with
    its suffix after it) of
    processes that no longer run: a download or unpacking that was killed (a partial archive
    can be as large as the model)."""
    for name in os.listdir(folder):
        match = _TEMPORARY.fullmatch(name)
        if match and not _process_runs(int(match.group(1))):
            remove_leftovers(os.path.join(folder, name))


def _process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def download(url: str, target: str, headers: dict | None = None) -> None:
    """Writes the body of `url` to `target`, logging progress (bytes, rate, ETA) as it goes.

    A connection that drops mid-way, or a server error (HTTP 5xx), is tried again (_ATTEMPTS in
    all, _RETRY_SECONDS apart, more each time), from where it stopped where the server takes a
    byte range (as Cloud Storage and the Hugging Face Hub's file store do), else from the start.

    Raises:
      urllib.error.HTTPError: the server answered with an error (e.g. 404); `target` is then
        removed.
      OSError: no connection, or the body was cut short at every attempt.
    """
    written, total = 0, 0
    with open(target, "wb") as writer:
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                written, total = _download_into(url, writer, headers or {}, written, total)
                if not total or written == total:
                    return
                problem = f"cut short: {written} of {total} bytes"
            except urllib.error.HTTPError as error:
                if error.code < 500 or attempt == _ATTEMPTS:  # 5xx: the server's trouble, retried
                    writer.close()
                    os.remove(target)  # none of it: a caller may take a 404 as "no such file"
                    raise
                problem = f"HTTP {error.code}"
            except (OSError, http.client.HTTPException) as error:
                problem = f"{type(error).__name__}: {error}"
            if attempt == _ATTEMPTS:
                raise OSError(f"download of {url} failed {attempt} times; the last: {problem}")
            logging.warning(
                "download of %s: %s; trying again (%d of %d)", url, problem, attempt + 1, _ATTEMPTS
            )
            time.sleep(_RETRY_SECONDS * attempt)


def _download_into(url: str, writer, headers: dict, written: int, total: int) -> tuple[int, int]:
    """One request for `url`: the rest of the body after `written` bytes where the server takes
    a range (206), else all of it (`writer` emptied first). Returns (bytes written, the body's
    size or 0 where unknown)."""
    if written:
        headers = {**headers, "Range": f"bytes={written}-"}
    try:
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60)
    except urllib.error.HTTPError:
        raise
    except OSError as error:
        raise OSError(f"cannot download {url}: {error}") from None
    with response:
        length = int(response.headers.get("Content-Length") or 0)
        if written and response.status == 206:
            logging.info("Resuming %s at %.1f MB", url, written / 1e6)
        else:
            writer.seek(0)
            writer.truncate()
            written, total = 0, length
            logging.info(
                "Downloading %s (%s)", url, f"{total / 1e6:.1f} MB" if total else "size unknown"
            )
        started, last_report, start_bytes = time.monotonic(), time.monotonic(), written
        while chunk := response.read(_CHUNK_BYTES):
            writer.write(chunk)
            written += len(chunk)
            now = time.monotonic()
            if now - last_report >= _PROGRESS_SECONDS:
                last_report = now
                rate = (written - start_bytes) / (now - started)
                eta = f", ETA {(total - written) / rate:.0f} s" if total and rate else ""
                logging.info("  %.1f MB, %.1f MB/s%s", written / 1e6, rate / 1e6, eta)
    return written, total


def publish_folder(temporary: str, final: str) -> None:
    """Renames the whole folder `temporary` to `final`; where a run beside this one got there
    first, keeps theirs and removes this one."""
    try:
        os.rename(temporary, final)
    except OSError:
        if not os.path.isdir(final):
            raise
        shutil.rmtree(temporary, ignore_errors=True)


def remove_leftovers(*paths: str) -> None:
    """Removes the files or folders among `paths` that exist (temporary names after a failure)."""
    for path in paths:
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.exists(path):
            os.remove(path)
