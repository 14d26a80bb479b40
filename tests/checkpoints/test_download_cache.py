"""Downloads into the cache (download_cache.py): resumed by the next run after a cut or a kill,
started over when the server's file changed, made once when two runs ask at the same time, and
credentials kept off the hosts a redirect leads to. Served from 127.0.0.1."""

import base64
import hashlib
import http.server
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile

import pytest

from official_bert.checkpoints import download_cache
from official_bert.checkpoints.checkpoint_url import resolve_checkpoint_url
from official_bert.checkpoints.download_cache import download
from tests.conftest import ORIGINAL_TINY, REPO_ROOT

RELEASE = "uncased_L-2_H-64_A-2"
RELEASE_FILES = ("bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001", "vocab.txt")


class _FileHandler(http.server.BaseHTTPRequestHandler):
    """Serves `files` (path -> bytes) with an ETag (the body's version), honouring a byte range
    only where If-Range names the ETag served now, as Cloud Storage does. `mode`: "whole";
    "cut" (half the body under a whole-body Content-Length, then the connection closed;
    no ranges); "cut_then_range" (the same, ranges answered); "corrupt_range" (a range
    answered with other bytes, as a broken cache between would);
    "stall" (half the body, then nothing until `release` is set); "ignore_if_range" (a range
    answered whatever the If-Range). Each test makes its own subclass."""

    files: dict = {}
    linked_sha256 = None  # what /linked/ redirects tell; None: the file's own
    version = "1"
    mode = "whole"
    delay = 0.0
    release: threading.Event
    requests: list = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.startswith("/linked/"):  # as the Hub redirects a large file: its SHA-256
            target = self.path[len("/linked") :]
            self.send_response(302)
            self.send_header("Location", target)
            sha256 = self.linked_sha256 or hashlib.sha256(self.files[target]).hexdigest()
            self.send_header("X-Linked-Etag", f'"{sha256}"')
            self.end_headers()
            return
        body = self.files.get(self.path)
        type(self).requests.append(
            (self.path, self.headers.get("Range"), self.headers.get("If-Range"))
        )
        time.sleep(self.delay)
        if body is None:
            self.send_error(404)
            return
        etag = f'"v{self.version}"'
        md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
        requested = self.headers.get("Range")
        takes_range = self.mode == "ignore_if_range" or self.headers.get("If-Range") == etag
        if requested and self.mode != "cut" and takes_range:
            start = int(requested.removeprefix("bytes=").rstrip("-"))
            if self.mode == "corrupt_range":  # other bytes under the same ETag
                body = body[:start] + bytes(len(body) - start)
            self.send_response(206)
            self.send_header("ETag", etag)
            self.send_header("x-goog-hash", f"crc32c=AAAAAA==,md5={md5}")
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.send_header("Content-Length", str(len(body) - start))
            self.end_headers()
            self.wfile.write(body[start:])
            return
        self.send_response(200)
        self.send_header("ETag", etag)
        self.send_header("x-goog-hash", f"crc32c=AAAAAA==,md5={md5}")  # as Cloud Storage
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.mode in ("cut", "cut_then_range", "stall"):
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            if self.mode == "stall":
                self.release.wait(60)
            self.close_connection = True
            return
        self.wfile.write(body)


def _release_zip() -> bytes:
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in RELEASE_FILES:
            archive.write(ORIGINAL_TINY / name, f"{RELEASE}/{name}")
    return buffer.getvalue()


@pytest.fixture
def server(tmp_path, monkeypatch):
    """(handler class, base URL): the release's zip at /{RELEASE}.zip; OFFICIAL_BERT_CACHE set
    to an empty folder."""
    handler = type(
        "Handler",
        (_FileHandler,),
        {
            "files": {f"/{RELEASE}.zip": _release_zip()},
            "requests": [],
            "release": threading.Event(),
        },
    )
    running = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=running.serve_forever, daemon=True).start()
    monkeypatch.setenv("OFFICIAL_BERT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(download_cache, "_RETRY_SECONDS", 0.01)
    yield handler, f"http://127.0.0.1:{running.server_address[1]}"
    handler.release.set()
    running.shutdown()
    running.server_close()


def _partials(cache) -> list:
    return sorted(cache.rglob(".*.partial"))


def _check_release(folder) -> None:
    assert os.path.basename(folder) == RELEASE
    for name in RELEASE_FILES:
        with open(os.path.join(folder, name), "rb") as mine:
            assert mine.read() == (ORIGINAL_TINY / name).read_bytes(), name


def test_a_dropped_download_is_resumed_where_it_stopped(server, tmp_path):
    handler, base = server
    handler.mode = "cut_then_range"
    whole = handler.files[f"/{RELEASE}.zip"]
    download(f"{base}/{RELEASE}.zip", str(tmp_path / "downloaded.zip"))
    assert (tmp_path / "downloaded.zip").read_bytes() == whole
    assert handler.requests == [
        (f"/{RELEASE}.zip", None, None),
        (f"/{RELEASE}.zip", f"bytes={len(whole) // 2}-", '"v1"'),
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["downloaded.zip"]  # no side file


def test_a_download_cut_short_is_resumed_by_the_next_run(server, tmp_path):
    handler, base = server
    url = f"{base}/{RELEASE}.zip"
    whole = handler.files[f"/{RELEASE}.zip"]
    handler.mode = "cut"
    with pytest.raises(OSError, match="cut short.*the next run goes on from what arrived"):
        resolve_checkpoint_url(url)
    (partial,) = _partials(tmp_path / "cache")
    assert partial.read_bytes() == whole[: len(whole) // 2]
    handler.mode, handler.requests = "whole", []
    _check_release(resolve_checkpoint_url(url))
    assert handler.requests == [(f"/{RELEASE}.zip", f"bytes={len(whole) // 2}-", '"v1"')]
    assert _partials(tmp_path / "cache") == []


def test_a_resumed_download_whose_md5_differs_is_removed(server, tmp_path):
    """Cloud Storage tells each object's MD5 (x-goog-hash): a file put together from two runs
    that is not the server's is never taken whole; the next run downloads it anew."""
    handler, base = server
    url = f"{base}/{RELEASE}.zip"
    handler.mode = "cut"
    with pytest.raises(OSError, match="cut short"):
        resolve_checkpoint_url(url)
    handler.mode = "corrupt_range"
    with pytest.raises(OSError, match=r"its MD5 is [0-9a-f]{32}, the server's [0-9a-f]{32}"):
        resolve_checkpoint_url(url)
    assert _partials(tmp_path / "cache") == []
    handler.mode, handler.requests = "whole", []
    _check_release(resolve_checkpoint_url(url))
    assert [requested for _, requested, _ in handler.requests] == [None]
    # Cloud Storage's hash of a gzip-stored object it un-gzips is not the body's: not checked.
    md5 = base64.b64encode(hashlib.md5(b"x").digest()).decode()
    told = {"x-goog-hash": f"crc32c=AAAAAA==,md5={md5}"}
    assert download_cache._md5_of(told) == hashlib.md5(b"x").hexdigest()
    assert download_cache._md5_of({**told, "x-goog-stored-content-encoding": "gzip"}) is None
    assert download_cache._md5_of({"Content-MD5": "not base64"}) is None


def test_a_file_behind_a_redirect_is_checked_against_the_hubs_sha256(server, tmp_path):
    """The Hub redirects a large file to its store with X-Linked-Etag, the file's SHA-256: a
    download that does not match it is removed, one that does is kept."""
    handler, base = server
    download(f"{base}/linked/{RELEASE}.zip", str(tmp_path / "good.zip"))
    assert (tmp_path / "good.zip").read_bytes() == handler.files[f"/{RELEASE}.zip"]
    handler.linked_sha256 = "0" * 64
    with pytest.raises(OSError, match=r"its SHA256 is [0-9a-f]{64}, the server's 0{64}"):
        download(f"{base}/linked/{RELEASE}.zip", str(tmp_path / "bad.zip"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.zip"]


@pytest.mark.parametrize("mode", ["whole", "ignore_if_range"])
def test_a_partial_download_of_a_changed_file_starts_over(server, tmp_path, mode):
    """The file changed on the server since the partial download: a server that honours
    If-Range sends it whole; one that sends the range anyway is caught by its ETag."""
    handler, base = server
    url = f"{base}/{RELEASE}.zip"
    old_body = handler.files[f"/{RELEASE}.zip"]
    handler.files[f"/{RELEASE}.zip"] = b"0" * len(old_body)  # a file of the same size, v1
    handler.mode = "cut"
    with pytest.raises(OSError, match="cut short"):
        resolve_checkpoint_url(url)
    handler.files[f"/{RELEASE}.zip"], handler.version = old_body, "2"
    handler.mode, handler.requests = mode, []
    _check_release(resolve_checkpoint_url(url))
    resumed_at = f"bytes={len(old_body) // 2}-"
    expected = [resumed_at] if mode == "whole" else [resumed_at, None]  # 206 refused: again
    assert [requested for _, requested, _ in handler.requests] == expected


def test_a_killed_download_is_resumed_by_the_next_run(server, tmp_path):
    handler, base = server
    url = f"{base}/{RELEASE}.zip"
    whole = handler.files[f"/{RELEASE}.zip"]
    handler.mode = "stall"
    killed = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from official_bert.checkpoints.checkpoint_url import "
            "resolve_checkpoint_url as r; r(sys.argv[1])",
            url,
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "OFFICIAL_BERT_CACHE": str(tmp_path / "cache")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not any(p.stat().st_size == len(whole) // 2 for p in _partials(tmp_path / "cache")):
            assert time.monotonic() < deadline and killed.poll() is None, "no partial download"
            time.sleep(0.1)
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    handler.mode, handler.requests = "whole", []
    _check_release(resolve_checkpoint_url(url))
    assert handler.requests == [(f"/{RELEASE}.zip", f"bytes={len(whole) // 2}-", '"v1"')]


def test_two_runs_at_once_download_once(server, caplog):
    handler, base = server
    url = f"{base}/{RELEASE}.zip"
    handler.delay = 0.5
    folders = []
    runs = [
        threading.Thread(target=lambda: folders.append(resolve_checkpoint_url(url)))
        for _ in range(2)
    ]
    for run in runs:
        run.start()
    for run in runs:
        run.join(60)
    assert len(folders) == 2 and folders[0] == folders[1]
    _check_release(folders[0])
    assert [path for path, _, _ in handler.requests] == [f"/{RELEASE}.zip"]


class _RecordingHandler(http.server.BaseHTTPRequestHandler):
    """/file: a body, with the Authorization header it got recorded; /to/URL: a redirect."""

    seen: list = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.startswith("/to/"):
            self.send_response(302)
            self.send_header("Location", self.path[len("/to/") :])
            self.end_headers()
            return
        type(self).seen.append(self.headers.get("Authorization"))
        self.send_response(200)
        self.send_header("Content-Length", "4")
        self.end_headers()
        self.wfile.write(b"body")


def test_a_token_is_not_sent_to_the_host_a_redirect_leads_to(tmp_path):
    """The Hub redirects a file to a signed URL on its file store: the token stays at the Hub."""
    hub = type("Hub", (_RecordingHandler,), {"seen": []})
    store = type("Store", (_RecordingHandler,), {"seen": []})
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), h) for h in (hub, store)]
    for running in servers:
        threading.Thread(target=running.serve_forever, daemon=True).start()
    hub_url, store_url = (f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
    token = {"Authorization": "Bearer t0k"}
    try:
        download(f"{hub_url}/to/{store_url}/file", str(tmp_path / "elsewhere"), token)
        download(f"{hub_url}/to/{hub_url}/file", str(tmp_path / "same_host"), token)
    finally:
        for running in servers:
            running.shutdown()
            running.server_close()
    assert store.seen == [None] and hub.seen == ["Bearer t0k"]
    assert (tmp_path / "elsewhere").read_bytes() == b"body"
    assert download_cache._same_origin("http://h/a", "https://h/b")
    assert not download_cache._same_origin("https://h/a", "http://h/b")
    assert not download_cache._same_origin("https://h/a", "https://h:8443/b")


def test_a_cache_on_a_file_system_without_locks_still_downloads(server, monkeypatch, caplog):
    import errno
    import fcntl

    def no_locks(*args):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    handler, base = server
    _check_release(resolve_checkpoint_url(f"{base}/{RELEASE}.zip"))
    assert "no lock on this file system" in caplog.text


def test_an_unwritable_cache_says_how_to_move_it(server, monkeypatch):
    """As a read-only home's ~/.cache answers (simulated: the tests may run as root, who
    writes anywhere)."""

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(download_cache.os, "makedirs", refuse)
    _, base = server
    with pytest.raises(PermissionError, match="set OFFICIAL_BERT_CACHE to a folder this user"):
        resolve_checkpoint_url(f"{base}/{RELEASE}.zip")
