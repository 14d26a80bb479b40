"""Weights named by an http(s) URL (checkpoint_url.py): an archive such as the original
release's zips, downloaded once into the cache and unpacked, served here from 127.0.0.1."""

import functools
import http.server
import json
import os
import pathlib
import shutil
import subprocess
import tarfile
import threading
import zipfile

import pytest

from official_bert.checkpoints import download_cache
from official_bert.checkpoints.checkpoint_url import resolve_checkpoint_url
from official_bert.checkpoints.download_cache import source_folder
from official_bert.checkpoints.pretrained import load_tokenizer
from official_bert.tasks.classification import ClassifierOptions
from tests.conftest import ORIGINAL_TINY, REPO_ROOT
from tests.warm_interpreter import run_script

# The original release's zips hold one folder with the checkpoint (and no `checkpoint` state
# file), its config and vocab.
RELEASE = "uncased_L-2_H-64_A-2"
RELEASE_FILES = (
    "bert_model.ckpt.index",
    "bert_model.ckpt.data-00000-of-00001",
    "bert_config.json",
    "vocab.txt",
)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def served(tmp_path, monkeypatch):
    """(base URL, cache folder): the release as .zip and .tar.gz, and a file that is no
    archive, behind http://127.0.0.1:<port>/; OFFICIAL_BERT_CACHE set to an empty folder."""
    root = tmp_path / "served"
    root.mkdir()
    with zipfile.ZipFile(root / f"{RELEASE}.zip", "w") as archive:
        for name in RELEASE_FILES:
            archive.write(ORIGINAL_TINY / name, f"{RELEASE}/{name}")
    with tarfile.open(root / f"{RELEASE}.tar.gz", "w:gz") as archive:
        for name in RELEASE_FILES:
            archive.add(ORIGINAL_TINY / name, arcname=f"{RELEASE}/{name}")
    # The 2020 releases' zips hold the files without a folder.
    flat = root / "flat"
    flat.mkdir()
    with zipfile.ZipFile(flat / f"{RELEASE}.zip", "w") as archive:
        for name in RELEASE_FILES:
            archive.write(ORIGINAL_TINY / name, name)
    (root / "damaged.zip").write_bytes(b"PK\x03\x04 not really a zip")
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cache = tmp_path / "cache"
    monkeypatch.setenv("OFFICIAL_BERT_CACHE", str(cache))
    monkeypatch.setattr(download_cache, "_RETRY_SECONDS", 0.01)
    yield f"http://127.0.0.1:{server.server_address[1]}", cache
    server.shutdown()
    server.server_close()


def _cache_entries(cache) -> list[str]:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*")) if cache.exists() else []


def _left_behind(cache) -> list[str]:
    """What a failed download left in the cache beyond per-URL folders and lock files."""
    entries = cache.rglob("*") if cache.exists() else []
    return [str(p) for p in entries if p.is_file() and not p.name.endswith(".lock")]


@pytest.mark.parametrize(
    "served_name", [f"{RELEASE}.zip", f"{RELEASE}.tar.gz", f"flat/{RELEASE}.zip"]
)
def test_an_archive_is_downloaded_once_and_read_as_its_folder(served, served_name):
    base, cache = served
    url = f"{base}/{served_name}"
    folder = resolve_checkpoint_url(url)
    assert os.path.basename(folder) == RELEASE and folder.startswith(str(cache))
    for name in RELEASE_FILES:
        with open(os.path.join(folder, name), "rb") as mine:
            assert mine.read() == (ORIGINAL_TINY / name).read_bytes(), name
    # Nothing of the download's temporary names is left, and a second call reads the cache.
    assert not [entry for entry in _cache_entries(cache) if ".tmp-" in entry]
    shutil.rmtree(str(cache / os.path.relpath(folder, cache).split(os.sep)[0] / RELEASE))
    assert resolve_checkpoint_url(url) == folder  # downloaded again into the same place
    before = _cache_entries(cache)
    assert resolve_checkpoint_url(url) == folder and _cache_entries(cache) == before
    # Not URLs: returned as they are.
    assert resolve_checkpoint_url("gs://bucket/bert_model.ckpt") == "gs://bucket/bert_model.ckpt"
    assert resolve_checkpoint_url(None) is None


def test_a_damaged_archive_leaves_nothing_behind(served):
    """Nothing but the lock file; a download cut short is kept and resumed
    (test_download_cache.py)."""
    base, cache = served
    with pytest.raises(ValueError, match=rf"{base}/damaged.zip: not a readable archive"):
        resolve_checkpoint_url(f"{base}/damaged.zip")
    assert _left_behind(cache) == []


def test_options_and_the_python_api_take_the_url(served, tmp_path):
    base, _ = served
    url = f"{base}/{RELEASE}.zip"
    options = ClassifierOptions(
        task_name="generic",
        data_dir=str(tmp_path),
        output_dir=str(tmp_path / "out"),
        init_checkpoint=url,
    )
    assert os.path.basename(options.init_checkpoint) == RELEASE
    assert options.vocab_file == os.path.join(options.init_checkpoint, "vocab.txt")
    expected = json.loads((ORIGINAL_TINY / "bert_config.json").read_text())
    assert options.bert_config.hidden_size == expected["hidden_size"]
    assert options.do_lower_case is True
    tokenizer = load_tokenizer(url)
    assert tokenizer.tokenize("The Hello") == tokenizer.tokenize("the hello")


def test_extract_features_from_a_url_alone(served, tmp_path):
    """--init_checkpoint=<the release's URL>, no config or vocab flag: the same features as from
    the local folder."""
    base, cache = served
    lines = tmp_path / "lines.txt"
    lines.write_text("the man went to the store\nhe bought milk ||| and bread\n")
    outputs = {}
    for name, checkpoint in (
        ("url", f"{base}/{RELEASE}.zip"),
        ("local", str(ORIGINAL_TINY / "bert_model.ckpt")),
    ):
        output = tmp_path / f"{name}.jsonl"
        ran = run_script(
            [
                str(REPO_ROOT / "extract_features.py"),
                f"--input_file={lines}",
                f"--output_file={output}",
                f"--init_checkpoint={checkpoint}",
                "--layers=-1",
                "--max_seq_length=16",
            ],
            env={**os.environ, "OFFICIAL_BERT_CACHE": str(cache)},
            cwd=tmp_path,
            timeout=300,
        )
        assert ran.returncode == 0, ran.stderr[-3000:]
        outputs[name] = (output.read_text(), ran.stderr)
    assert outputs["url"][0] == outputs["local"][0]
    assert f"Downloading {base}/{RELEASE}.zip" in outputs["url"][1], outputs["url"][1]


def test_what_killed_downloads_left_is_removed(served):
    """A download killed with SIGKILL leaves its temporary archive (as large as the model): the
    next use of the cache folder removes it, unless its process still runs."""
    base, _ = served
    url = f"{base}/{RELEASE}.zip"
    folder = pathlib.Path(source_folder(url))
    dead = subprocess.Popen(["true"])  # a process that has ended: its pid runs nothing
    dead.wait()
    killed = folder / f".{RELEASE}.tmp-{dead.pid}.zip"
    killed.write_bytes(b"PK partial")
    running = folder / f".{RELEASE}.tmp-1"  # pid 1 runs as long as the machine
    running.mkdir()
    resolve_checkpoint_url(url)
    assert not killed.exists() and running.is_dir()
