"""The cache of downloaded checkpoints: where they go, how a file is downloaded, how a folder
becomes visible only once whole.

The cache is `$OFFICIAL_BERT_CACHE`, else `~/.cache/official_bert`, one folder per source (a
hash of its URL). A download goes to `.NAME.partial` and is renamed when complete; one that is
cut short (or killed) is resumed by the next run. An archive is unpacked under a temporary name
(`.NAME.tmp-PID`, side_file_names.temporary_path), removed by a later run once its process has
ended. A lock file (`.NAME.lock`) lets one run at a time make a folder. So nothing a killed run
left is ever read as whole. Written by hand rather than with keras.utils.get_file, which
downloads under the final name (a killed download would be taken for a whole one the next time),
starts over after a failure and unpacks again at every call.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import json
import os
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request

from absl import logging

from official_bert.config import write_text_atomically
from official_bert.side_file_names import lock_path, partial_path

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
    try:
        os.makedirs(folder, exist_ok=True)
    except PermissionError:
        raise PermissionError(
            f"cannot write the download cache {checkpoint_cache_dir()}: set OFFICIAL_BERT_CACHE "
            "to a folder this user may write"
        ) from None
    remove_stale_temporaries(folder)
    return folder


def remove_stale_temporaries(folder: str) -> None:
    """Removes the temporary names in `folder` (side_file_names.temporary_path's
    `.NAME.tmp-PID`; earlier versions' archives with their suffix after it) of processes that
    no longer run: an unpacking or an earlier version's download that was killed (a partial
    archive can be as large as the model)."""
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
    """Writes the body of `url` to `target`, which appears only whole, logging progress (bytes,
    rate, ETA) as it goes. The caller holds exclusive(...) for a folder above `target`.

    The bytes go to `.NAME.partial` beside `target` (side_file_names.partial_path), with what
    the server said of the file (size, ETag, Last-Modified) in `.NAME.partial.json`. A download
    cut short (a dropped connection, a server error (HTTP 5xx), a killed or interrupted run)
    goes on from where it stopped, in this call (_ATTEMPTS in all, _RETRY_SECONDS apart, more
    each time) or in the next one for the same target: with a byte range where the server takes
    one, as Cloud Storage and the Hugging Face Hub's file store do, and only while the server
    still serves the same file (If-Range, then the ETag and size checked); else from the start.
    Where the server tells the file's MD5 (Cloud Storage does) or SHA-256 (the Hugging Face
    Hub does for its large files), the whole is checked against it.

    Raises:
      urllib.error.HTTPError: the server answered with a client error (e.g. 404); nothing is
        kept.
      OSError: no connection, a server error (5xx) or a body cut short at every attempt; what
        arrived is kept for the next call.
    """
    partial = partial_path(target)
    known = _read_validator(partial, url)
    if known is None:
        remove_leftovers(partial, _validator_path(partial))
    written = os.path.getsize(partial) if known and os.path.isfile(partial) else 0
    if known and written > known["size"]:  # not the start of that file
        written, known = 0, None
    with open(partial, "r+b" if written else "wb") as writer:
        writer.seek(written)
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                written, known = _download_into(url, writer, headers or {}, written, known)
                if not known["size"] or written == known["size"]:
                    break
                problem = f"cut short: {written} of {known['size']} bytes"
            except urllib.error.HTTPError as error:
                if error.code < 500:  # the file is not there: none of it is kept
                    writer.close()
                    remove_leftovers(partial, _validator_path(partial))
                    raise
                problem = f"HTTP {error.code}"  # the server's trouble: tried again
            except (OSError, http.client.HTTPException) as error:
                problem = f"{type(error).__name__}: {error}"
            if attempt == _ATTEMPTS:
                raise OSError(
                    f"download of {url} failed {attempt} times; the last: {problem} (the next "
                    "run goes on from what arrived)"
                )
            logging.warning(
                "download of %s: %s; trying again (%d of %d)", url, problem, attempt + 1, _ATTEMPTS
            )
            time.sleep(_RETRY_SECONDS * attempt)
    _check_digests(partial, url, known)
    os.replace(partial, target)
    remove_leftovers(_validator_path(partial))


def _validator_path(partial: str) -> str:
    return partial + ".json"


def _read_validator(partial: str, url: str) -> dict | None:
    """What the server said of the file that `partial` holds the start of, where a resumed
    download can check that it still serves that file: its size and an ETag or Last-Modified."""
    try:
        with open(_validator_path(partial), encoding="utf-8") as reader:
            known = json.load(reader)
    except (OSError, ValueError):
        return None
    if not isinstance(known, dict) or known.get("url") != url or not known.get("size"):
        return None
    return known if known.get("etag") or known.get("last_modified") else None


def _if_range(known: dict) -> str:
    """The If-Range value: a strong ETag, else the date (a weak ETag may not be used there)."""
    etag = known.get("etag")
    return etag if etag and not etag.startswith("W/") else known.get("last_modified") or ""


def _download_into(url: str, writer, headers: dict, written: int, known: dict | None):
    """One request for `url`: the rest of the body after `written` bytes where the server sends
    the same file's range (206), else all of it (`writer` emptied first). Returns (bytes
    written, what the server said of the file: {"size": 0} where it told no size)."""
    if written and known and written == known["size"]:
        return written, known  # whole; the run that wrote it ended before its rename
    if written and known:
        headers = {**headers, "Range": f"bytes={written}-"}
        if_range = _if_range(known)
        if if_range:  # else a retry in this call: the size and start are checked
            headers["If-Range"] = if_range
    request = urllib.request.Request(url, headers=headers)
    try:
        response = open_url(request, timeout=60)
    except urllib.error.HTTPError as error:
        if error.code != 416 or not written:
            raise
        return _download_into(url, writer, _without_range(headers), 0, None)  # not that file
    except OSError as error:
        raise OSError(f"cannot download {url}: {error}") from None
    with response:
        if written and known and response.status == 206:
            if not _same_file(response, written, known):
                response.close()
                return _download_into(url, writer, _without_range(headers), 0, None)
            logging.info("Resuming %s at %.1f of %.1f MB", url, written / 1e6, known["size"] / 1e6)
        else:
            writer.seek(0)
            writer.truncate()
            written = 0
            known = _validator_of(response, url, getattr(request, "linked_etag", None))
            if known["size"] and (known["etag"] or known["last_modified"]):
                write_text_atomically(_validator_path(writer.name), json.dumps(known))
            else:  # nothing to check a resumed download against: never resumed
                remove_leftovers(_validator_path(writer.name))
            logging.info(
                "Downloading %s (%s)",
                url,
                f"{known['size'] / 1e6:.1f} MB" if known["size"] else "size unknown",
            )
        total = known["size"]
        started, last_report, start_bytes = time.monotonic(), time.monotonic(), written
        while chunk := response.read1(_CHUNK_BYTES):  # what has arrived, up to 1 MB
            writer.write(chunk)
            written += len(chunk)
            now = time.monotonic()
            if now - last_report >= _PROGRESS_SECONDS:
                last_report = now
                rate = (written - start_bytes) / (now - started)
                eta = f", ETA {(total - written) / rate:.0f} s" if total and rate else ""
                logging.info("  %.1f MB, %.1f MB/s%s", written / 1e6, rate / 1e6, eta)
        writer.flush()
    return written, known


def _without_range(headers: dict) -> dict:
    return {k: v for k, v in headers.items() if k not in ("Range", "If-Range")}


def _validator_of(response, url: str, linked_etag: str | None) -> dict:
    """What the server said of the file: size, validators, and the digests to check it by."""
    sha256 = (linked_etag or "").removeprefix("W/").strip('"').lower()
    return {
        "url": url,
        "size": int(response.headers.get("Content-Length") or 0),
        "etag": response.headers.get("ETag"),
        "last_modified": response.headers.get("Last-Modified"),
        "md5": _md5_of(response.headers),
        # The Hub's X-Linked-Etag of a large (LFS) file is its SHA-256; of a small file a git
        # blob id (40 hex digits), which is not checked.
        "sha256": sha256 if re.fullmatch(r"[0-9a-f]{64}", sha256) else None,
    }


def _transcoded(headers) -> bool:
    """Whether the body is not the object as stored (Cloud Storage un-gzips an object stored
    gzipped for a client that did not ask for gzip; its MD5 is then the stored bytes')."""
    stored = (headers.get("x-goog-stored-content-encoding") or "identity").lower()
    return stored != "identity" or bool(headers.get("Content-Encoding"))


def _md5_of(headers) -> str | None:
    """The body's MD5 (hex) as the server tells it: Cloud Storage's `x-goog-hash: crc32c=...,
    md5=<base64>` (the original release's zips are served so), or `Content-MD5`; else None."""
    if _transcoded(headers):
        return None
    values = [
        part.strip()[len("md5=") :]
        for part in (headers.get("x-goog-hash") or "").split(",")
        if part.strip().startswith("md5=")
    ]
    value = values[0] if values else headers.get("Content-MD5")
    try:
        return base64.b64decode(value, validate=True).hex() if value else None
    except ValueError:  # not base64: nothing to check against
        return None


def _check_digests(partial: str, url: str, known: dict) -> None:
    """Compares the whole download with the digests the server told (an MD5, a SHA-256), so
    that a file put together across runs and connections is never taken whole when it is not;
    on a mismatch the bytes and their record are removed."""
    wanted = {name: known[name] for name in ("md5", "sha256") if known.get(name)}
    if not wanted:
        return
    digests = {name: hashlib.new(name, usedforsecurity=False) for name in wanted}
    with open(partial, "rb") as reader:
        while chunk := reader.read(_CHUNK_BYTES * 8):
            for digest in digests.values():
                digest.update(chunk)
    for name, expected in wanted.items():
        if digests[name].hexdigest() != expected:
            remove_leftovers(partial, _validator_path(partial))
            raise OSError(
                f"download of {url}: its {name.upper()} is {digests[name].hexdigest()}, the "
                f"server's {expected}; removed (the next run downloads it anew)"
            )


def _same_file(response, written: int, known: dict) -> bool:
    """Whether a 206 answer is the rest of the file begun earlier: it starts at `written`, the
    file's size is the one seen then, and so is its ETag where the server sends one."""
    content_range = re.fullmatch(
        r"bytes (\d+)-\d+/(\d+)", response.headers.get("Content-Range") or ""
    )
    etag = response.headers.get("ETag")
    return bool(
        content_range
        and int(content_range.group(1)) == written
        and int(content_range.group(2)) == known["size"]
        and (not etag or not known.get("etag") or etag == known["etag"])
    )


class _CredentialsStayOnTheirHost(urllib.request.HTTPRedirectHandler):
    """Follows redirects as urllib does, without the Authorization header where the redirect
    leaves the host it was sent to (urllib's own handler forwards it to any host): the Hugging
    Face Hub answers a file request with a signed URL on its file store or CDN, which needs no
    token and must not see one."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        redirected = super().redirect_request(req, fp, code, msg, headers, newurl)
        if redirected is None:
            return None
        if not _same_origin(req.full_url, newurl):
            redirected.remove_header("Authorization")
        # What the redirect said of the file (the Hub's X-Linked-Etag: the SHA-256 of a large
        # file), kept on the request that open_url was given.
        redirected.first_request = getattr(req, "first_request", req)
        if headers.get("X-Linked-Etag"):
            redirected.first_request.linked_etag = headers["X-Linked-Etag"]
        return redirected


def _same_origin(url: str, other: str) -> bool:
    """The same host and port, and not from https down to http (http up to https, as a server
    redirects to its secure address, keeps the origin)."""
    old, new = urllib.parse.urlsplit(url), urllib.parse.urlsplit(other)
    ports = {"http": 80, "https": 443}
    if old.hostname != new.hostname or (old.scheme == "https" and new.scheme != "https"):
        return False
    return (old.port or ports.get(old.scheme)) == (new.port or ports.get(new.scheme)) or (
        old.scheme == "http" and old.port in (None, 80) and new.port in (None, 443)
    )


_OPENER = urllib.request.build_opener(_CredentialsStayOnTheirHost)


def open_url(request: urllib.request.Request, timeout: float):
    """urllib.request.urlopen, with credentials kept off the hosts a redirect leads to."""
    return _OPENER.open(request, timeout=timeout)


@contextlib.contextmanager
def exclusive(path: str):
    """Holds, for the block, the lock of `path` (an advisory flock of `.NAME.lock` beside it):
    one process at a time downloads or unpacks into `path`; another one waits, then finds it
    made. The system releases the lock when its holder ends, killed or not. Where fcntl is
    missing (Windows), or the cache's file system takes no locks, no lock (with a warning for
    the latter): two runs may then both download, and one keeps its copy."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(lock_path(path), "a") as lock:
        locked = True
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logging.info("Another run is making %s; waiting for it", path)
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError as error:  # e.g. ENOLCK: a network or FUSE file system without locks
            logging.warning("%s: no lock on this file system (%s); going on", path, error)
            locked = False
        try:
            yield
        finally:
            if locked:
                fcntl.flock(lock, fcntl.LOCK_UN)


def worth_resuming(error: BaseException) -> bool:
    """Whether a download that stopped with `error` is kept for the next run: a lost
    connection or an interrupted run, not an answer that the file is missing or refused, and
    not a file that turned out unreadable."""
    if isinstance(error, KeyboardInterrupt):
        return True
    return isinstance(error, OSError) and not isinstance(error, FileNotFoundError)


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
