"""run_pretraining.py on dynamic-masking records (create_pretraining_data --masking=dynamic):
they are detected and masked in the input pipeline, and a killed run resumes with the masks of
the uninterrupted one. Records from the project's own sample corpus (no ../shared needed)."""

import numpy as np
import tensorflow as tf

from official_bert.data.pretraining.data_writer import (
    PretrainingDataSettings,
    write_pretraining_examples,
)
from tests.conftest import REPO_ROOT
from tests.tasks.test_pretraining import (
    _checkpoint_values,
    _script_command,
    _tiny_config_file,
    kill_after_checkpoint,
)
from tests.warm_interpreter import run_script

CORPUS = REPO_ROOT / "samples" / "pretraining_corpus.txt"


# Three script runs of a tiny model: ~30 s on a quiet 2-core machine.
def test_killed_run_resumes_with_the_masks_of_an_uninterrupted_run(minilm_dir, tmp_path):
    """Two runs on the same dynamic records, one killed after a checkpoint and restarted: the
    final weights (and optimizer state) are equal, exactly. The resumed run skips the batches
    read before the checkpoint; it reaches the same weights only if every later batch is
    masked as in the uninterrupted run (masks drawn from a stateful generator would differ
    after a restart), so equal weights mean equal masks at every step."""
    paths = [str(tmp_path / f"dynamic-{i}.tfrecord") for i in range(2)]
    settings = PretrainingDataSettings(
        vocab_file=str(minilm_dir / "vocab.txt"),
        max_seq_length=32,
        max_predictions_per_seq=5,
        dupe_factor=2,
        do_whole_word_mask=True,
        masking="dynamic",
    )
    write_pretraining_examples([str(CORPUS)], paths, settings, num_workers=1)
    instances = sum(1 for p in paths for _ in tf.data.TFRecordDataset(p))
    config = _tiny_config_file(tmp_path, num_hidden_layers=1)  # the runs are compared

    def command(output_dir):
        return _script_command(
            ",".join(paths),
            output_dir,
            config,
            "--do_train",
            "--learning_rate=1e-3",
            "--num_train_steps=40",
            "--num_warmup_steps=5",
            "--save_checkpoints_steps=5",
            "--iterations_per_loop=5",
            "--seed=3",
        )

    # 40 steps of 8 read every record several times: masks of several epochs are compared.
    assert 40 * 8 > 3 * instances
    result = run_script(command(tmp_path / "uninterrupted")[1:], timeout=300, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr[-3000:]

    killed_dir = tmp_path / "killed"
    killed_at = kill_after_checkpoint(command(killed_dir), killed_dir, "ckpt-10", "ckpt-40")

    resumed = run_script(command(killed_dir)[1:], timeout=300, cwd=REPO_ROOT)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"at step {killed_at.rsplit('-', 1)[1]}" in resumed.stderr
    final = _checkpoint_values(str(killed_dir / "ckpt-40"))
    expected = _checkpoint_values(str(tmp_path / "uninterrupted" / "ckpt-40"))
    assert final.keys() == expected.keys()
    for name, value in expected.items():
        np.testing.assert_array_equal(final[name], value, err_msg=name)
