"""Every command in the ```bash blocks of README.md and docs/*.md runs as written, on tiny
stand-ins for its inputs: under `pytest -m slow` all of them; in the default run every command
of the scripts that do not train and the first of each training script, while the other
training commands have their flags parsed and their options built (commands_run_by_default).
A command reading a /tmp/ path that another command writes runs that one first where it has
not run in this session (producers_of), so that `-m slow`, `-k` and workers that split the file
see every command's inputs.

$BERT_BASE_DIR is a tiny BERT in the original release's layout (bert_config.json, vocab.txt,
bert_model.ckpt with the pre-training heads), $GLUE_DIR holds small tasks in GLUE's file layouts,
$SQUAD_DIR small SQuAD v1.1 and v2.0 files, $SICK_DIR a small task in SICK's layout, $BERT_CHINESE_DIR a
tiny Chinese BERT (samples/zh/vocab.txt, in a folder named as Google's chinese_L-12_H-768_A-12,
so the casing check sees it as that model), $XNLI_DIR a small XNLI in its release's layout, and
/tmp/ becomes a fresh folder. The flags are the pages', unchanged: a flag that a script lost or
renamed fails here. `make demo` is run by tests/test_end_to_end_demo.py (in its quick mode) and `make test` is
CI itself.

What a block cannot do here is said in the markdown itself, by an HTML comment on the line just
before the block, so a reader sees it too:

  <!-- test: not run (needs a Cloud TPU and gs:// buckets) -->   the block is not run; the reason
                                                                 is required
  <!-- test: run with --num_train_steps=2 --max_seq_length=32 --> these flags replace the
                                                                 command's own (or are added)
"""

import glob
import json
import os
import re
import shlex

import pytest

from tests.conftest import REPO_ROOT
from tests.warm_interpreter import run_script

README = REPO_ROOT / "README.md"
DOCS = sorted((REPO_ROOT / "docs").glob("*.md"))
SCRIPTS = (
    "create_pretraining_data.py",
    "run_pretraining.py",
    "run_classifier.py",
    "run_classifier_with_tfhub.py",
    "run_multitask.py",
    "run_squad.py",
    "extract_features.py",
    "export_tfhub.py",
    "convert_checkpoint.py",
)
# The page of each script in docs/ (convert_checkpoint.py's is the page on checkpoint layouts).
SCRIPT_PAGES = {script: script.replace(".py", ".md") for script in SCRIPTS}
SCRIPT_PAGES["convert_checkpoint.py"] = "checkpoints.md"
WORDS = (
    "the a an is was of and to in on at he she it they said his her their company business "
    "growth strategy fit does not did pie food service chief officer report directly man woman "
    "plane taking off air hard hat dancing wearing girl styling brushing hair good bad movie "
    "great awful fun dull . , ' \" ? !"
).split()

BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
MARKER = re.compile(r"^<!-- test: (.*?) -->$")


def _block_marker(path, preceding: str) -> str | None:
    """The `test:` comment on the line before a block, checked: `not run (reason)` or
    `run with --flag=value ...`."""
    line = preceding.strip()
    if not line.startswith("<!--"):
        return None
    match = MARKER.match(line)
    assert match, f"{path.name}: a comment before a bash block that is no test marker: {line!r}"
    marker = match.group(1).strip()
    if marker.startswith("not run"):
        assert re.fullmatch(r"not run \(.+\)", marker), (
            f"{path.name}: say why a block is not run: {line!r}"
        )
    else:
        assert re.fullmatch(r"run with( --\w+=\S+)+", marker), (
            f"{path.name}: expected `not run (reason)` or `run with --flag=value ...`: {line!r}"
        )
    return marker


def _with_flags(command: str, marker: str) -> str:
    """The command with the marker's `run with` flags in place of its own (or added)."""
    words = command.split()
    for flag in marker.split()[2:]:
        name = flag.split("=", 1)[0] + "="
        kept = [w for w in words if not w.startswith(name)]
        words = kept + [flag]
    return " ".join(words)


def page_blocks(path) -> list[tuple[str | None, list[str]]]:
    """Each ```bash block of a page: its marker (or None) and its shell commands, continuation
    lines joined, comments cut."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in BLOCK.finditer(text):
        preceding, block = text[: match.start()].rstrip().rsplit("\n", 1)[-1], match.group(1)
        commands = []
        for command in block.replace("\\\n", " ").splitlines():
            command = command.split(" #", 1)[0].strip()
            if command and not command.startswith("#"):
                commands.append(" ".join(command.split()))
        blocks.append((_block_marker(path, preceding), commands))
    return blocks


def readme_commands() -> list[str]:
    """README.md's shell commands, in order (all of its blocks run)."""
    return [c for marker, commands in page_blocks(README) for c in commands]


def documented_commands() -> list[str]:
    """The commands of README.md and docs/*.md that run here, as they run (`run with` applied),
    each once, a producer of a /tmp/ path before its readers."""
    commands = []
    for path in [README, *DOCS]:
        for marker, block in page_blocks(path):
            if marker and marker.startswith("not run"):
                continue
            for command in block:
                commands.append(_with_flags(command, marker) if marker else command)
    return _producers_first(list(dict.fromkeys(commands)))  # a command shown twice runs once


OUTPUT_FLAGS = ("--output_file", "--output_dir", "--export_path")


def _tmp_paths(command: str, outputs: bool) -> set[str]:
    """The /tmp/ paths a command writes (outputs=True) or reads (outputs=False)."""
    return {
        arg.split("=", 1)[1].rstrip("/")
        for arg in command.split()
        if "=/tmp/" in arg and arg.startswith(OUTPUT_FLAGS) == outputs
    }


def _waits_for(command: str, others: list[str]) -> bool:
    written = {path for other in others for path in _tmp_paths(other, outputs=True)}
    reads = _tmp_paths(command, outputs=False)
    return any(r == w or r.startswith(w + "/") for r in reads for w in written)


def _producers_first(commands: list[str]) -> list[str]:
    """README order, except that a command reading a /tmp/ path runs after the one writing it
    (e.g. extract_features.py with the layer mix that run_classifier.py writes, shown before)."""
    ordered, pending = [], list(commands)
    while pending:
        ready = next(
            (c for c in pending if not _waits_for(c, [o for o in pending if o != c])), pending[0]
        )
        ordered.append(ready)
        pending.remove(ready)
    return ordered


def _write_tiny_bert(directory, tokens=None, num_layers=4):
    """A tiny BERT in the original layout; `tokens` is its vocabulary (default: WORDS, letters
    and digits). Four layers by default: extract_features' command reads --layers=-1,-2,-3,-4."""
    import keras

    from official_bert.checkpoints import save_bert_weights
    from official_bert.config import BertConfig
    from official_bert.models import BertEncoder, BertPretrainer

    if tokens is None:
        letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + letters
        tokens += ["##" + letter for letter in letters]
    directory.mkdir()
    (directory / "vocab.txt").write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    config = BertConfig(
        vocab_size=len(tokens),
        hidden_size=32,
        num_hidden_layers=num_layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        type_vocab_size=2,
    )
    config.to_json_file(str(directory / "bert_config.json"))
    keras.utils.set_random_seed(3)
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    model.build()
    save_bert_weights(model, str(directory / "bert_model.ckpt"), "tf1")


def _sentence(i: int) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % 60] for k in range(6 + i % 5)) + " ."


def _write_glue(glue_dir):
    """MRPC, STS-B, CoLA and SST-2 in GLUE's own layouts (headers and columns), 16/8/4 rows."""
    sizes = {"train": 16, "dev": 8, "test": 4}
    layouts = {
        "MRPC": (
            "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String",
            lambda i: f"{i % 2}\t{100 + i}\t{200 + i}\t{_sentence(i)}\t{_sentence(i + 1)}",
            "index\t#1 ID\t#2 ID\t#1 String\t#2 String",
            lambda i: f"{i}\t{100 + i}\t{200 + i}\t{_sentence(i)}\t{_sentence(i + 2)}",
        ),
        "STS-B": (
            "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore",
            lambda i: (
                f"{i}\tmain\tf\t2012\t{i:04d}\tnone\tnone\t{_sentence(i)}\t{_sentence(i + 1)}"
                f"\t{i % 6}.000"
            ),
            "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2",
            lambda i: (
                f"{i}\tmain\tf\t2012\t{i:04d}\tnone\tnone\t{_sentence(i)}\t{_sentence(i + 3)}"
            ),
        ),
        "CoLA": (
            None,
            lambda i: f"src\t{i % 2}\t\t{_sentence(i)}",
            "index\tsentence",
            lambda i: f"{i}\t{_sentence(i)}",
        ),
        "SST-2": (
            "sentence\tlabel",
            lambda i: f"{_sentence(i)}\t{i % 2}",
            "index\tsentence",
            lambda i: f"{i}\t{_sentence(i)}",
        ),
    }
    for task, (header, row, test_header, test_row) in layouts.items():
        (glue_dir / task).mkdir(parents=True)
        for split, count in sizes.items():
            first, make = (test_header, test_row) if split == "test" else (header, row)
            lines = ([first] if first else []) + [make(i) for i in range(count)]
            (glue_dir / task / f"{split}.tsv").write_text("\n".join(lines) + "\n", "utf-8")


def _write_squad(squad_dir):
    """train-v1.1.json and dev-v1.1.json: two paragraphs, answers at their real offsets; the
    v2.0 files add an unanswerable question to each paragraph."""
    squad_dir.mkdir()
    for name, offset in (
        ("train-v1.1.json", 0),
        ("dev-v1.1.json", 5),
        ("train-v2.0.json", 0),
        ("dev-v2.0.json", 5),
    ):
        paragraphs = []
        for p in range(2):
            context = " ".join(_sentence(offset + p * 3 + k) for k in range(12))
            qas = []
            for q in range(3):
                answer = _sentence(offset + p * 3 + q * 2).split()[1]
                qas.append(
                    {
                        "id": f"{name}-{p}-{q}",
                        "question": f"what was the {answer} ?",
                        "answers": [{"text": answer, "answer_start": context.index(answer)}],
                    }
                )
            if "v2.0" in name:
                qas.append(
                    {
                        "id": f"{name}-{p}-x",
                        "question": "who flew ?",
                        "answers": [],
                        "is_impossible": True,
                    }
                )
            paragraphs.append({"context": context, "qas": qas})
        version = "v2.0" if "v2.0" in name else "1.1"
        data = {"version": version, "data": [{"title": "t", "paragraphs": paragraphs}]}
        (squad_dir / name).write_text(json.dumps(data), encoding="utf-8")


def _write_sick(sick_dir):
    """train.tsv and dev.tsv in SICK's layout (docs/adding_a_task.md's generic-task example)."""
    sick_dir.mkdir()
    labels = ("NEUTRAL", "ENTAILMENT", "CONTRADICTION")
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_label"
    for split, count in (("train", 12), ("dev", 6)):
        rows = [
            f"{i}\t{_sentence(i)}\t{_sentence(i + 1)}\t{1 + i % 5}.0\t{labels[i % 3]}"
            for i in range(count)
        ]
        (sick_dir / f"{split}.tsv").write_text("\n".join([header, *rows]) + "\n", "utf-8")


def _write_xnli(xnli_dir):
    """XNLI's layout: multinli/multinli.train.zh.tsv (premise, hypo, label; the translated
    MultiNLI spells contradiction "contradictory") and xnli.{dev,test}.tsv (language, gold_label,
    ..., sentence1 and sentence2 in columns 6 and 7), two languages, 12/6/6 Chinese rows."""
    (xnli_dir / "multinli").mkdir(parents=True)
    premises = ["今天下雨了", "他在车站等朋友", "这家店的面包很好吃", "孩子们在公园里放风筝"]
    hypotheses = ["天气很好", "他在等人", "面包不好吃", "有人在公园里"]
    train_labels = ("contradictory", "entailment", "neutral")
    rows = ["premise\thypo\tlabel"] + [
        f"{premises[i % 4]}。\t{hypotheses[(i + 1) % 4]}。\t{train_labels[i % 3]}"
        for i in range(12)
    ]
    train = xnli_dir / "multinli" / "multinli.train.zh.tsv"
    train.write_text("\n".join(rows) + "\n", "utf-8")
    header = "language\tgold_label\tsentence1_binary_parse\tsentence2_binary_parse\t"
    header += "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tpromptID\tpairID"
    labels = ("contradiction", "entailment", "neutral")
    for split in ("dev", "test"):
        rows = [header]
        for i in range(6):
            for language, premise, hypothesis in (
                ("zh", premises[i % 4] + "。", hypotheses[i % 4] + "。"),
                ("en", "it rained .", "the sun was out ."),
            ):
                parses = "\t".join(["x"] * 4)
                rows.append(
                    f"{language}\t{labels[i % 3]}\t{parses}\t{premise}\t{hypothesis}\t{i}\t{i}"
                )
        (xnli_dir / f"xnli.{split}.tsv").write_text("\n".join(rows) + "\n", "utf-8")


@pytest.fixture(scope="module")
def readme_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("readme")
    _write_tiny_bert(root / "bert_base")
    _write_glue(root / "glue")
    _write_squad(root / "squad")
    _write_sick(root / "sick")
    chinese_vocab = (REPO_ROOT / "samples" / "zh" / "vocab.txt").read_text(encoding="utf-8")
    # Two layers: no command reads the Chinese model's layers by index.
    _write_tiny_bert(root / "chinese_L-12_H-768_A-12", chinese_vocab.split("\n")[:-1], num_layers=2)
    _write_xnli(root / "xnli")
    tmp = root / "tmp"
    tmp.mkdir()
    (tmp / "input.txt").write_text(
        "the man was dancing .\nthe plane is taking off ||| an air plane is taking off .\n",
        encoding="utf-8",
    )
    env = dict(
        os.environ,
        BERT_BASE_DIR=str(root / "bert_base"),
        GLUE_DIR=str(root / "glue"),
        SQUAD_DIR=str(root / "squad"),
        SICK_DIR=str(root / "sick"),
        BERT_CHINESE_DIR=str(root / "chinese_L-12_H-768_A-12"),
        XNLI_DIR=str(root / "xnli"),
        TF_CPP_MIN_LOG_LEVEL="3",
    )
    return env, tmp


def test_readme_shows_the_quickstart_and_links_every_script_page():
    commands = readme_commands()
    assert commands[:2] == ["make demo", "make test"], commands[:2]
    readme = README.read_text(encoding="utf-8")
    for script, page in SCRIPT_PAGES.items():
        assert (REPO_ROOT / "docs" / page).exists(), f"no docs/{page} for {script}"
        assert f"](docs/{page})" in readme, f"README: no link to docs/{page} ({script})"
    # `make demo` is the demo that tests/test_end_to_end_demo.py runs.
    assert "run_demo.py" in (REPO_ROOT / "Makefile").read_text()


def test_every_documented_command_is_run_and_every_script_shown():
    commands = documented_commands()
    for command in commands:
        if command not in ("make demo", "make test"):  # those two: see the module docstring
            assert command.startswith("python "), f"a command no test runs: {command!r}"
    shown = {shlex.split(c)[1] for c in commands if c.startswith("python ")}
    for script in SCRIPTS:
        assert script in shown, f"no command of README.md or docs/ runs {script}"
        page = REPO_ROOT / "docs" / SCRIPT_PAGES[script]
        assert any(
            c.startswith(f"python {script}") for _, block in page_blocks(page) for c in block
        ), f"docs/{page.name} shows no command of {script}"


def test_markers_say_what_they_do(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- test: not run (needs a TPU) -->\n```bash\npython a.py --x=1\n```\n"
        "<!-- test: run with --steps=2 --seq=8 -->\n```bash\npython b.py --steps=100 \\\n"
        "  --out=/tmp/o\n```\n```bash\npython c.py\n```\n",
        encoding="utf-8",
    )
    blocks = page_blocks(page)
    assert blocks == [
        ("not run (needs a TPU)", ["python a.py --x=1"]),
        ("run with --steps=2 --seq=8", ["python b.py --steps=100 --out=/tmp/o"]),
        (None, ["python c.py"]),
    ]
    assert _with_flags(blocks[1][1][0], blocks[1][0]) == (
        "python b.py --out=/tmp/o --steps=2 --seq=8"
    )
    page.write_text("<!-- test: not run -->\n```bash\npython a.py\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="say why"):
        page_blocks(page)


# Scripts that train: each takes 15-30 s of tracing and running even on the tiny model, so the
# default run runs the first documented command of each end to end and checks the flags and
# options of the others (test_documented_command_parses); `pytest -m slow` runs them all.
TRAINING_SCRIPTS = (
    "run_classifier.py",
    "run_classifier_with_tfhub.py",
    "run_pretraining.py",
    "run_squad.py",
    "run_multitask.py",
)


def commands_run_by_default(commands: list[str]) -> set[str]:
    """The commands (in run order) that the default run runs end to end: every command of a
    script that does not train, the first of each training script, and none that reads a /tmp/
    path written by a command left to the slow run."""
    chosen, scripts_seen, left = set(), set(), []
    for command in commands:
        script = shlex.split(command)[1]
        if script in TRAINING_SCRIPTS and script in scripts_seen or _waits_for(command, left):
            left.append(command)
        else:
            chosen.add(command)
        scripts_seen.add(script)
    return chosen


SCRIPT_COMMANDS = [c for c in documented_commands() if c.startswith("python ")]
RUN_BY_DEFAULT = commands_run_by_default(SCRIPT_COMMANDS)


def _script_args(command: str, env: dict, tmp) -> list[str]:
    """The command's arguments after `python`, with /tmp/ in `tmp` and the $VARIABLES of env."""
    args = [re.sub(r"^(--\w+=)/tmp/", rf"\g<1>{tmp}/", a) for a in shlex.split(command)[1:]]
    for name in (
        "BERT_BASE_DIR",
        "GLUE_DIR",
        "SQUAD_DIR",
        "SICK_DIR",
        "BERT_CHINESE_DIR",
        "XNLI_DIR",
    ):
        args = [a.replace(f"${name}", env[name]) for a in args]
    assert all("$" not in a for a in args), f"an undefined variable in {args}"
    return args


def test_the_default_run_runs_each_script():
    run = [c for c in SCRIPT_COMMANDS if c in RUN_BY_DEFAULT]
    assert {shlex.split(c)[1] for c in run} >= set(SCRIPTS), run
    for script in TRAINING_SCRIPTS:
        assert sum(shlex.split(c)[1] == script for c in run) == 1, script
    # A command reading what a slow command writes is slow too.
    assert commands_run_by_default(
        [
            "python run_squad.py --output_dir=/tmp/a",
            "python run_squad.py --output_dir=/tmp/b",
            "python -c 'x' --export_dir=/tmp/b/serving_model",
            "python -c 'x' --export_dir=/tmp/a/serving_model",
        ]
    ) == {
        "python run_squad.py --output_dir=/tmp/a",
        "python -c 'x' --export_dir=/tmp/a/serving_model",
    }


def producers_of(command: str, commands: list[str]) -> list[str]:
    """The commands before `command` in `commands` (run order) that write a /tmp/ path it
    reads, and their own producers, in run order."""
    needed = []
    for producer in commands[: commands.index(command)]:
        if _waits_for(command, [producer]):
            needed += [c for c in [*producers_of(producer, commands), producer] if c not in needed]
    return sorted(needed, key=commands.index)


def test_a_command_needs_the_producers_of_what_it_reads_and_theirs():
    commands = [
        "python a.py --output_dir=/tmp/a",
        "python b.py --output_dir=/tmp/b",
        "python c.py --init_checkpoint=/tmp/a/ckpt --output_dir=/tmp/c",
        "python d.py --export_dir=/tmp/c/serving",
    ]
    assert producers_of(commands[3], commands) == [commands[0], commands[2]]
    assert producers_of(commands[1], commands) == []


# The commands run to the end in this session, per readme_env folder: a command whose producers
# did not run here (left out by `-m slow`, `-k` or another worker) runs them first.
_COMMANDS_RUN: dict[str, set[str]] = {}


def _run_documented_command(command: str, env: dict, tmp) -> list[str]:
    """Runs the command (asserting its exit status 0); returns its arguments as run."""
    args = _script_args(command, env, tmp)
    result = run_script(args, env=env, cwd=REPO_ROOT)
    assert result.returncode == 0, f"{command}\n{result.stderr[-3000:]}"
    _COMMANDS_RUN.setdefault(str(tmp), set()).add(command)
    return args


@pytest.mark.parametrize(
    "command",
    [
        c if c in RUN_BY_DEFAULT else pytest.param(c, marks=pytest.mark.slow)
        for c in SCRIPT_COMMANDS
    ],
    ids=lambda c: c[:60],
)
def test_documented_command_runs(command, readme_env):
    env, tmp = readme_env
    for producer in producers_of(command, SCRIPT_COMMANDS):
        if producer not in _COMMANDS_RUN.get(str(tmp), set()):
            _run_documented_command(producer, env, tmp)
    args = _run_documented_command(command, env, tmp)
    for flag in OUTPUT_FLAGS:
        for arg in args:
            if arg.startswith(flag + "="):
                path = arg.split("=", 1)[1]
                # A sharded output is <prefix>-SSSSS-of-NNNNN.
                written = os.path.exists(path) or glob.glob(glob.escape(path) + "-*-of-*")
                assert written, f"{command}: no {arg}"


# In a forked warm interpreter: the script imported (its flags defined, main not run), the
# command's flags parsed by absl (unknown flags, bad values and missing required flags fail)
# and the script's options built from them (the checks of their __post_init__: files that the
# model flags name, the original flags' mapping onto the TF2 ones).
PARSE_ONLY = """
import dataclasses, json, runpy, sys, types
from absl import flags
from official_bert.option_flags import options_from_flags
script, argv = sys.argv[1], json.loads(sys.argv[2])
namespace = runpy.run_path(script, run_name="documented_command_check")
# A script that runs a command of official_bert.commands: the command defines the flags.
for value in list(namespace.values()):
    if isinstance(value, types.ModuleType) and value.__name__.startswith("official_bert.commands."):
        value.define_flags()
        namespace = vars(value)
flags.FLAGS(argv)
built = [
    options_from_flags(value)
    for name, value in namespace.items()
    if name.endswith("Options") and dataclasses.is_dataclass(value)
]
print(json.dumps([type(options).__name__ for options in built]))
"""


@pytest.mark.parametrize(
    "command",
    [c for c in SCRIPT_COMMANDS if c not in RUN_BY_DEFAULT and not c.startswith("python -c")],
    ids=lambda c: c[:60],
)
def test_documented_command_parses(command, readme_env):
    """The commands that only `pytest -m slow` runs: their flags and options hold."""
    env, tmp = readme_env
    args = _script_args(command, env, tmp)
    result = run_script(["-c", PARSE_ONLY, args[0], json.dumps(args)], env=env, cwd=REPO_ROOT)
    assert result.returncode == 0, f"{command}\n{result.stderr[-3000:]}"
    assert json.loads(result.stdout.splitlines()[-1]), f"{command}: no options class found"


def readme_inline_commands() -> list[str]:
    """`python ...` commands quoted inline in the prose of README.md and docs/*.md (benchmarks,
    the quick demo)."""
    found = []
    for path in [README, *DOCS]:
        found += re.findall(r"`(?:nice )?(python3? [^`]+)`", path.read_text(encoding="utf-8"))
    return [" ".join(c.split()) for c in found]


def _defines_flag(sources: str, flag: str) -> bool:
    name = re.escape(flag)
    return bool(
        re.search(rf"add_argument\(\s*[\"']--{name}[\"']", sources)
        or re.search(rf"DEFINE_\w+\(\s*[\"']{name}[\"']", sources)
        # A field of an options dataclass made with option(): a flag of the scripts that
        # define their options' flags (official_bert/option_flags.py).
        or re.search(rf"^\s+{name}: [^=\n]+= option\(", sources, re.M)
    )


def test_inline_commands_name_existing_scripts_and_flags():
    """Inline commands are benchmarks (minutes to hours: not run here) and `run_demo.py --quick`
    (run by tests/test_end_to_end_demo.py); their scripts must exist and define every flag used."""
    commands = readme_inline_commands()
    assert any(c.startswith("python run_demo.py") for c in commands)
    shared_flags = "".join(
        p.read_text()
        for p in (REPO_ROOT / "official_bert").rglob("*.py")
        if "option(" in p.read_text()
    )
    for command in commands:
        words = shlex.split(command)
        script = REPO_ROOT / words[1]
        assert script.exists(), f"{command!r}: no {words[1]}"
        command = REPO_ROOT / "official_bert" / "commands" / words[1]  # the script's command
        sources = script.read_text() + shared_flags
        sources += command.read_text() if command.exists() else ""
        for word in words[2:]:
            if word.startswith("--"):
                flag = word[2:].split("=", 1)[0]
                assert _defines_flag(sources, flag), f"{command!r}: {script.name} has no --{flag}"
