"""A processor of the user's own, in a file outside the library, reached by run_classifier.py
through --processor_module: the worked example of docs/adding_a_task.md, as the page writes it."""

import re

from tests.conftest import REPO_ROOT
from tests.warm_interpreter import run_script

PAGE = REPO_ROOT / "docs" / "adding_a_task.md"


def _page_processor() -> str:
    """The page's my_tasks.py block."""
    blocks = re.findall(r"```python\n(# my_tasks\.py.*?)```", PAGE.read_text(), re.S)
    assert len(blocks) == 1, "docs/adding_a_task.md: expected one ```python block of my_tasks.py"
    return blocks[0]


def _reviews(folder):
    folder.mkdir()
    labelled = [("1", "great value, works well"), ("0", "broke after a day"), ("1", "love it")]
    for split in ("train", "dev"):
        rows = ["label\ttext"] + [f"{label}\t{text}" for label, text in labelled * 4]
        (folder / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    (folder / "test.tsv").write_text("text\nworks well\nbroke\nfine\n")
    return folder


def test_run_classifier_trains_a_processor_from_the_users_file(original_tiny_dir, tmp_path):
    (tmp_path / "my_tasks.py").write_text(_page_processor())
    data_dir, output_dir = _reviews(tmp_path / "reviews"), tmp_path / "out"
    base = original_tiny_dir
    flags = [
        "--task_name=my_reviews",
        f"--data_dir={data_dir}",
        "--do_train=true",
        "--do_eval=true",
        "--do_predict=true",
        f"--vocab_file={base / 'vocab.txt'}",
        f"--bert_config_file={base / 'bert_config.json'}",
        f"--init_checkpoint={base / 'bert_model.ckpt'}",
        "--max_seq_length=16",
        "--train_batch_size=4",
        "--num_train_epochs=1",
        "--export_dir=",
        f"--output_dir={output_dir}",
    ]
    # A file's path, relative to where the command runs, as the page's command passes it.
    script = str(REPO_ROOT / "run_classifier.py")
    ran = run_script([script, "--processor_module=my_tasks.py", *flags], cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "eval_accuracy" in (output_dir / "eval_results.txt").read_text()
    assert len((output_dir / "test_results.tsv").read_text().splitlines()) == 3

    # Without the module the name is unknown; a module that is not there is named.
    ran = run_script([script, *flags], cwd=tmp_path)
    assert ran.returncode != 0 and "unknown task_name 'my_reviews'" in ran.stderr
    ran = run_script(["run_classifier.py", "--processor_module=no_such_tasks", *flags])
    assert ran.returncode != 0
    assert "--processor_module=no_such_tasks: no module named 'no_such_tasks'" in ran.stderr
    assert "Traceback" not in ran.stderr
