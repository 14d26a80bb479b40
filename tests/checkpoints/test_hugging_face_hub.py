"""Hugging Face Hub repositories as --init_checkpoint (hugging_face_hub.py), served from
127.0.0.1 in the Hub's layout (`/{repo}/resolve/{revision}/{file}`, $HF_ENDPOINT)."""

import functools
import http.server
import json
import os
import pathlib
import shutil
import threading
import types

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

from official_bert.checkpoints import download_cache
from official_bert.checkpoints.checkpoint_url import resolve_checkpoint_url
from official_bert.checkpoints.conversion import convert_checkpoint
from official_bert.checkpoints.hugging_face_hub import _repository_and_revision
from official_bert.script_main import is_input_error
from tests.conftest import FIXTURES


class _HubHandler(http.server.SimpleHTTPRequestHandler):
    """Files under the served folder, at `/{repo}/resolve/main/` and at the commit the handler
    tells (X-Repo-Commit, as the Hub does; None: a mirror that tells none); the `gated/`
    repositories only with the right token. Each fixture makes its own subclass."""

    commit: str | None = None
    gets: list = []
    failing: tuple = ()  # file names answered with HTTP 503

    def log_message(self, *args):
        pass

    def translate_path(self, path):
        if self.commit:
            path = path.replace(f"/resolve/{self.commit}/", "/resolve/main/")
        return super().translate_path(path)

    def end_headers(self):
        if self.commit:
            self.send_header("X-Repo-Commit", self.commit)
        super().end_headers()

    def _refused(self) -> bool:
        if self.path.startswith("/gated/") and self.headers.get("Authorization") != "Bearer t0k":
            self.send_error(401)
            return True
        return False

    def do_HEAD(self):
        if not self._refused():
            if self.path.endswith(self.failing):
                self.send_error(503)
                return
            super().do_HEAD()

    def do_GET(self):
        if not self._refused():
            type(self).gets.append(self.path)
            if self.path.endswith(self.failing):
                self.send_error(503)
                return
            super().do_GET()


def _repository(root, name: str, source, files) -> None:
    folder = root / name / "resolve" / "main"
    folder.mkdir(parents=True)
    for file in files:
        shutil.copy(source / file, folder / file)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A Hub at $HF_ENDPOINT with: `tiny/bert-pt` (config.json, pytorch_model.bin, vocab.txt),
    `tiny/bert-sharded` (safetensors in two shards and their index), `tiny/no-weights`
    (config.json only) and `gated/bert-pt` (the first, behind a token)."""
    root = tmp_path / "hub"
    pytorch = FIXTURES / "hf_weights" / "bert"
    (tmp_path / "vocab").mkdir()
    vocab = tmp_path / "vocab" / "vocab.txt"
    config = json.loads((pytorch / "config.json").read_text())
    vocab.write_text("".join(f"[unused{i}]\n" for i in range(config["vocab_size"])))
    for name in ("tiny/bert-pt", "gated/bert-pt"):
        _repository(root, name, pytorch, ["config.json", "pytorch_model.bin"])
        shutil.copy(vocab, root / name / "resolve" / "main" / "vocab.txt")
    classifier = FIXTURES / "hf_finetuned_heads" / "sequence_classification"
    _repository(root, "tiny/bert-sharded", classifier, ["config.json"])
    sharded = root / "tiny" / "bert-sharded" / "resolve" / "main"
    tensors = load_file(str(classifier / "model.safetensors"))
    names = sorted(tensors)
    weight_map = {}
    for index, part in enumerate((names[: len(names) // 2], names[len(names) // 2 :])):
        shard = f"model-0000{index + 1}-of-00002.safetensors"
        save_file({name: tensors[name] for name in part}, str(sharded / shard))
        weight_map.update(dict.fromkeys(part, shard))
    (sharded / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    _repository(root, "tiny/no-weights", pytorch, ["config.json"])
    roberta = root / "tiny" / "roberta" / "resolve" / "main"
    _repository(root, "tiny/roberta", pytorch, ["pytorch_model.bin"])
    (roberta / "config.json").write_text(json.dumps({**config, "model_type": "roberta"}))
    handler_class = type("Handler", (_HubHandler,), {"commit": "a" * 40, "gets": []})
    handler = functools.partial(handler_class, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("OFFICIAL_BERT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    running = [server]

    def stop():  # the Hub goes offline (once; the fixture's end calls it too)
        while running:
            running.pop().shutdown()
            server.server_close()

    yield types.SimpleNamespace(root=root, handler=handler_class, stop=stop)
    stop()


def test_references_name_a_repository_and_revision():
    assert _repository_and_revision("hf://bert-base-uncased") == ("bert-base-uncased", "main")
    assert _repository_and_revision("hf://hfl/chinese-roberta-wwm-ext@v1.0") == (
        "hfl/chinese-roberta-wwm-ext",
        "v1.0",
    )
    assert _repository_and_revision(
        "https://huggingface.co/google-bert/bert-base-chinese/tree/refs%2Fpr%2F1"
    ) == ("google-bert/bert-base-chinese", "refs/pr/1")
    with pytest.raises(ValueError, match="expected hf://OWNER/NAME"):
        _repository_and_revision("hf://a/b/c")


def _tf1_arrays(prefix) -> dict:
    reader = tf.train.load_checkpoint(str(prefix))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


@pytest.mark.parametrize(
    "repository, local",
    [
        ("tiny/bert-pt", FIXTURES / "hf_weights" / "bert"),
        ("tiny/bert-sharded", FIXTURES / "hf_finetuned_heads" / "sequence_classification"),
    ],
)
def test_a_repository_converts_as_its_local_folder_does(hub, tmp_path, repository, local):
    folder = resolve_checkpoint_url(f"hf://{repository}")
    assert folder.endswith(repository.split("/")[1])
    convert_checkpoint(f"hf://{repository}", str(tmp_path / "from_hub"), "tf1")
    convert_checkpoint(str(local), str(tmp_path / "from_folder"), "tf1")
    from_hub = _tf1_arrays(tmp_path / "from_hub" / "bert_model.ckpt")
    from_folder = _tf1_arrays(tmp_path / "from_folder" / "bert_model.ckpt")
    assert set(from_hub) == set(from_folder) and len(from_hub) >= 30
    for name, value in from_folder.items():
        np.testing.assert_array_equal(from_hub[name], value, err_msg=name)
    # A second use reads the cache: the Hub is asked for the commit only.
    downloads = list(hub.handler.gets)
    assert resolve_checkpoint_url(f"hf://{repository}") == folder
    assert hub.handler.gets == downloads


def test_missing_repositories_weights_and_tokens_are_named(hub, monkeypatch):
    with pytest.raises(FileNotFoundError, match=r"hf://tiny/none: config.json not found at "):
        resolve_checkpoint_url("hf://tiny/none")
    with pytest.raises(FileNotFoundError, match=r"no BERT weights read here \(model.safetensors"):
        resolve_checkpoint_url("hf://tiny/no-weights")
    with pytest.raises(ValueError, match="a 'roberta' model .* its weights were not downloaded"):
        resolve_checkpoint_url("hf://tiny/roberta")
    with pytest.raises(FileNotFoundError, match="HTTP 401.*needs HF_TOKEN"):
        resolve_checkpoint_url("hf://gated/bert-pt")
    monkeypatch.setenv("HF_TOKEN", "t0k")
    folder = resolve_checkpoint_url("hf://gated/bert-pt")
    assert sorted(p.name for p in pathlib.Path(folder).iterdir()) == [
        "config.json",
        "pytorch_model.bin",
        "vocab.txt",
    ]


def test_a_new_commit_is_downloaded_and_the_last_one_serves_offline(hub):
    served_vocab = hub.root / "tiny" / "bert-pt" / "resolve" / "main" / "vocab.txt"
    first = resolve_checkpoint_url("hf://tiny/bert-pt")
    assert hub.handler.gets[0] == f"/tiny/bert-pt/resolve/{'a' * 40}/config.json"
    # A push: new files at a new commit. The next use downloads them, beside the old copy.
    served_vocab.write_text(served_vocab.read_text().replace("[unused0]", "[pushed]"))
    hub.handler.commit = "b" * 40
    second = resolve_checkpoint_url("hf://tiny/bert-pt")
    assert second != first and (pathlib.Path(first) / "vocab.txt").exists()
    assert (pathlib.Path(second) / "vocab.txt").read_text().startswith("[pushed]")
    # No connection: the copy of the commit last seen.
    hub.stop()
    assert resolve_checkpoint_url("hf://tiny/bert-pt") == second
    # A commit named as the revision, here already: read without asking the Hub.
    assert resolve_checkpoint_url(f"hf://tiny/bert-pt@{'a' * 40}") == first
    with pytest.raises(OSError, match="cannot|refused"):
        resolve_checkpoint_url("hf://tiny/bert-sharded")  # never downloaded: nothing to use


def test_a_download_stopped_by_the_server_goes_on_from_the_files_that_arrived(hub, monkeypatch):
    monkeypatch.setattr(download_cache, "_RETRY_SECONDS", 0.01)
    hub.handler.failing = ("/vocab.txt",)
    with pytest.raises(
        OSError, match=r"/vocab.txt failed 3 times; the last: HTTP 503 \(the next run goes on"
    ):
        resolve_checkpoint_url("hf://tiny/bert-pt")
    assert sum(path.endswith("/vocab.txt") for path in hub.handler.gets) == 3
    hub.handler.failing, hub.handler.gets = (), []
    folder = pathlib.Path(resolve_checkpoint_url("hf://tiny/bert-pt"))
    # The commit's config and weights arrived in the first run: not fetched again.
    fetched = [path.rsplit("/", 1)[1] for path in hub.handler.gets]
    assert "vocab.txt" in fetched and not {"config.json", "pytorch_model.bin"} & set(fetched)
    served = hub.root / "tiny" / "bert-pt" / "resolve" / "main"
    for name in ("config.json", "pytorch_model.bin", "vocab.txt"):
        assert (folder / name).read_bytes() == (served / name).read_bytes(), name
    # The Hub in trouble (HTTP 503 for the commit's question): the copy here serves.
    hub.handler.failing = ("/config.json",)
    assert resolve_checkpoint_url("hf://tiny/bert-pt") == str(folder)


def test_a_mirror_that_tells_no_commit_is_cached_by_revision(hub):
    hub.handler.commit = None
    folder = resolve_checkpoint_url("hf://tiny/bert-pt@main")
    assert hub.handler.gets[0] == "/tiny/bert-pt/resolve/main/config.json"
    downloads = list(hub.handler.gets)
    assert resolve_checkpoint_url("hf://tiny/bert-pt@main") == folder
    assert hub.handler.gets == downloads


def test_an_unreachable_hub_without_a_copy_is_one_line_naming_the_reference(hub, tmp_path):
    # It re-raised urllib's URLError, whose innermost frame is in urllib: the scripts printed
    # a 26-frame traceback instead of their one-line error.
    endpoint = os.environ["HF_ENDPOINT"]
    hub.stop()
    with pytest.raises(OSError) as error:
        resolve_checkpoint_url("hf://tiny/bert-pt")
    assert type(error.value) is OSError
    message = str(error.value)
    assert message.startswith(f"hf://tiny/bert-pt: the Hugging Face Hub ({endpoint}) cannot be")
    assert f"no copy of it is in the download cache {tmp_path / 'cache'}" in message
    assert "Connection refused" in message and "\n" not in message
    assert is_input_error(error.value, "script.py")
