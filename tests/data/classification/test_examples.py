"""GLUE and generic task processors: real GLUE files, every task's layout, and bad input."""

import pytest

from official_bert.data.classification.examples import (
    ClassifierDataError,
    DataProcessor,
    get_processor,
    processor_names,
    register_processor,
)
from tests.conftest import SHARED

GLUE = SHARED / "data" / "glue"


def _glue(task):
    path = GLUE / task
    if not path.exists():
        pytest.skip(f"not present: {path}")
    return str(path)


@pytest.mark.parametrize(
    "task, folder, counts, labels, pairs",
    [
        ("MRPC", "MRPC", (3668, 408, 1725), ["0", "1"], True),
        ("SST-2", "SST-2", (67349, 872, 1821), ["0", "1"], False),
        ("CoLA", "CoLA", (8551, 1043, 1063), ["0", "1"], False),
        ("STS-B", "STS-B", (5749, 1500, 1379), None, True),
    ],
)
def test_real_glue_files(task, folder, counts, labels, pairs):
    processor = get_processor(task, _glue(folder))
    train, dev, test = (processor.get_examples(split) for split in ("train", "dev", "test"))
    assert (len(train), len(dev), len(test)) == counts
    assert processor.get_labels() == labels
    assert processor.takes_pairs == pairs
    assert all((example.text_b is not None) == pairs for example in train + dev + test)
    assert all(example.label is None for example in test)
    if labels is None:
        assert all(0.0 <= float(example.label) <= 5.0 for example in train + dev)
    else:
        assert {example.label for example in train} == set(labels)


def test_mrpc_and_cola_columns():
    mrpc = get_processor("mrpc", _glue("MRPC")).get_examples("dev")[0]
    # The first dev row of GLUE MRPC.
    assert mrpc.label == "1"
    assert mrpc.text_a.startswith("He said the foodservice pie business")
    assert mrpc.text_b.startswith('"The foodservice pie business does not fit')
    cola = get_processor("cola", _glue("CoLA")).get_examples("train")[0]
    assert (cola.text_a, cola.label) == (
        "Our friends won't buy this analysis, let alone the next one we propose.",
        "1",
    )


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\t".join(line) + "\n" for line in lines), encoding="utf-8")


def test_mnli_qqp_qnli_rte_wnli_xnli_layouts(tmp_path):
    mnli_header = [f"c{i}" for i in range(11)] + ["gold_label"]
    mnli_row = ["0", "1", "2", "g", "p", "h", "pb", "hb", "A premise.", "A hypothesis.", "x"]
    _write(tmp_path / "mnli" / "train.tsv", [mnli_header, [*mnli_row, "neutral"]])
    _write(tmp_path / "mnli" / "dev_matched.tsv", [mnli_header, [*mnli_row, "entailment"]])
    _write(tmp_path / "mnli" / "dev_mismatched.tsv", [mnli_header, [*mnli_row, "contradiction"]])
    assert (
        get_processor("MNLI", str(tmp_path / "mnli")).get_examples("dev")[0].label == "entailment"
    )
    mismatched = get_processor("mnli-mm", str(tmp_path / "mnli")).get_examples("dev")[0]
    assert (mismatched.text_a, mismatched.text_b, mismatched.label) == (
        "A premise.",
        "A hypothesis.",
        "contradiction",
    )

    qqp_header = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
    _write(
        tmp_path / "qqp" / "train.tsv",
        [qqp_header, ["1", "2", "3", "Why?", "How?", "1"], ["2", "4", "5", "short row"]],
    )
    qqp = get_processor("qqp", str(tmp_path / "qqp")).get_examples("train")
    assert [(e.text_a, e.text_b, e.label) for e in qqp] == [
        ("Why?", "How?", "1")
    ]  # short row skipped

    for task in ("qnli", "rte"):
        _write(
            tmp_path / task / "train.tsv",
            [["index", "a", "b", "label"], ["0", "Q?", "S.", "not_entailment"]],
        )
        example = get_processor(task, str(tmp_path / task)).get_examples("train")[0]
        assert (example.text_a, example.text_b, example.label) == ("Q?", "S.", "not_entailment")
    _write(tmp_path / "wnli" / "dev.tsv", [["index", "s1", "s2", "label"], ["0", "A.", "B.", "1"]])
    assert get_processor("wnli", str(tmp_path / "wnli")).get_examples("dev")[0].label == "1"

    xnli_train = tmp_path / "xnli" / "multinli" / "multinli.train.de.tsv"
    _write(xnli_train, [["premise", "hypo", "label"], ["P.", "H.", "contradictory"]])
    dev_row = ["de", "neutral", "x", "x", "x", "x", "Prämisse.", "Hypothese."]
    _write(
        tmp_path / "xnli" / "xnli.dev.tsv",
        [["language", "gold_label", *"abcdef"], dev_row, ["fr", "neutral", *"abcd", "P", "H"]],
    )
    xnli = get_processor("xnli", str(tmp_path / "xnli"), language="de")
    assert xnli.get_examples("train")[0].label == "contradiction"
    dev = xnli.get_examples("dev")
    assert [(e.text_a, e.text_b, e.label) for e in dev] == [("Prämisse.", "Hypothese.", "neutral")]


def test_qqp_keeps_every_test_row(tmp_path):
    # test_results.tsv has no ids: a dropped test row would misalign every later prediction.
    (tmp_path / "test.tsv").write_text(
        "id\tquestion1\tquestion2\n0\tWhat is it?\tWhat?\n1\tOnly one question here\n2\tA\tB\n",
        encoding="utf-8",
    )
    test = get_processor("qqp", str(tmp_path)).get_examples("test")
    assert [(e.text_a, e.text_b) for e in test] == [
        ("What is it?", "What?"),
        ("Only one question here", ""),
        ("A", "B"),
    ]


def test_carriage_returns_are_dropped_as_the_original_reader_did(tmp_path):
    # The original read lines with TensorFlow's GFile, which drops every CR: a lone CR inside a
    # field joins its two sides instead of ending the row.
    (tmp_path / "train.tsv").write_bytes(b"sentence\tlabel\r\nline one\rstill one\t1\r\nbad\t0\n")
    train = get_processor("sst-2", str(tmp_path)).get_examples("train")
    assert [(e.text_a, e.label) for e in train] == [("line onestill one", "1"), ("bad", "0")]


def test_generic_task_with_named_columns_tsv_and_csv(tmp_path):
    _write(
        tmp_path / "tsv" / "train.tsv",
        [["id", "review", "stars"], ["1", "Great!", "pos"], ["2", "Bad.", "neg"]],
    )
    _write(tmp_path / "tsv" / "test.tsv", [["id", "review"], ["3", "Fine."]])
    processor = get_processor(
        "generic", str(tmp_path / "tsv"), text_a_column="review", label_column="stars"
    )
    assert processor.get_labels() == ["neg", "pos"]  # read from train, sorted
    assert not processor.takes_pairs
    assert [e.text_a for e in processor.get_examples("train")] == ["Great!", "Bad."]
    assert processor.get_examples("test")[0].label is None

    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "train.csv").write_text(
        'a,b,score\n"Hello, world",Hi,4.5\nx,y,1\n', encoding="utf-8"
    )
    processor = get_processor(
        "generic",
        str(tmp_path / "csv"),
        text_a_column="a",
        text_b_column="b",
        label_column="score",
        is_regression=True,
    )
    examples = processor.get_examples("train")
    assert (examples[0].text_a, examples[0].text_b, examples[0].label) == (
        "Hello, world",
        "Hi",
        "4.5",
    )
    assert processor.is_regression and processor.takes_pairs


def test_wrong_column_count_names_file_and_line(tmp_path):
    header = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    _write(
        tmp_path / "train.tsv",
        [header, ["1", "1", "2", "A.", "B."], ["0", "3", "4", "C.\tstray tab", "D."]],
    )
    with pytest.raises(
        ClassifierDataError, match=r"train\.tsv, line 3: 6 columns, but the header has 5"
    ):
        get_processor("mrpc", str(tmp_path)).get_examples("train")


def test_too_few_columns_for_the_task(tmp_path):
    _write(tmp_path / "train.tsv", [["sentence"], ["only one column"]])
    with pytest.raises(ClassifierDataError, match=r"train\.tsv, line 2: 1 columns, fewer than"):
        get_processor("sst-2", str(tmp_path)).get_examples("train")


def test_label_outside_the_label_set(tmp_path):
    _write(tmp_path / "dev.tsv", [["sentence", "label"], ["fine", "1"], ["odd", "positive"]])
    with pytest.raises(
        ClassifierDataError, match=r"dev\.tsv, line 3: label 'positive' is not one of"
    ):
        get_processor("sst-2", str(tmp_path)).get_examples("dev")
    _write(
        tmp_path / "stsb" / "train.tsv",
        [[f"c{i}" for i in range(10)], [*"0123456", "A", "B", "high"]],
    )
    with pytest.raises(ClassifierDataError, match="'high' is not a number"):
        get_processor("sts-b", str(tmp_path / "stsb")).get_examples("train")


def test_missing_data_dir_and_files_and_unknown_task(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        get_processor("mrpc", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        get_processor("mrpc", "")
    with pytest.raises(FileNotFoundError, match=r"train\.tsv"):
        get_processor("mrpc", str(tmp_path)).get_examples("train")
    with pytest.raises(ValueError, match="unknown task_name 'mrpcc'"):
        get_processor("mrpcc", str(tmp_path))


def test_registering_a_task_of_your_own(tmp_path):
    @register_processor("my_yes_no")
    class YesNoProcessor(DataProcessor):
        labels = ["no", "yes"]

        def example_from_row(self, split, row):
            return None if row.columns[0] == "skip" else self.make(split, row)

        def make(self, split, row):
            from official_bert.data.classification.examples import ClassifierExample

            return ClassifierExample(
                f"{split}-{row.line_number}", row.columns[0], None, row.columns[1]
            )

    _write(tmp_path / "train.tsv", [["text", "answer"], ["Is it?", "yes"], ["skip", "no"]])
    assert "my_yes_no" in processor_names()
    examples = get_processor("MY_YES_NO", str(tmp_path)).get_train_examples()
    assert [(e.text_a, e.label) for e in examples] == [("Is it?", "yes")]


@pytest.mark.parametrize(
    "data, line, expected",
    [
        # A Chinese user's file saved in the Windows code page (GB18030/GBK).
        ("text_a\tlabel\n很好\t1\n".encode("gb18030"), 2, r"not UTF-8 .*iconv -f GB18030"),
        ("text_a\tlabel\nok\t1\n".encode("utf-16"), 1, r"UTF-16 .*iconv -f UTF-16"),
        # One Latin-1 byte on line 3.
        (b"text_a\tlabel\nok\t1\ncaf\xe9\t0\n", 3, r"not UTF-8 .*iconv -f GB18030"),
    ],
)
def test_a_file_that_is_not_utf8_is_named_with_its_line(tmp_path, data, line, expected):
    (tmp_path / "train.tsv").write_bytes(data)
    processor = get_processor("generic", str(tmp_path), text_a_column=0, label_column=1)
    with pytest.raises(ClassifierDataError, match=rf"train\.tsv, line {line} \(byte \d+\): "):
        processor.get_examples("train")
    with pytest.raises(ClassifierDataError, match=expected):
        processor.get_examples("train")


def test_a_header_that_is_not_utf8_is_named(tmp_path):
    """Named columns read the header alone, before the rows: it is checked there too."""
    (tmp_path / "train.tsv").write_bytes("文本\tlabel\n好\t1\n".encode("gb18030"))
    processor = get_processor("generic", str(tmp_path), text_a_column="text_a")
    with pytest.raises(ClassifierDataError, match=r"train\.tsv, line 1 \(byte 0\): not UTF-8"):
        processor.get_examples("train")


def test_a_data_dir_that_cannot_be_read_says_why(tmp_path):
    """A file system TensorFlow cannot reach (here a scheme it lacks; gs:// without a network
    fails the same way) is not reported as "is not a directory"."""
    with pytest.raises(
        FileNotFoundError,
        match=r"data_dir 's3://bucket/MRPC' cannot be read: File system scheme 's3' not impl",
    ):
        get_processor("mrpc", "s3://bucket/MRPC")
    with pytest.raises(FileNotFoundError, match=r"data_dir '.*absent' is not a directory"):
        get_processor("mrpc", str(tmp_path / "absent"))
    (tmp_path / "a_file").write_text("")
    with pytest.raises(FileNotFoundError, match=r"data_dir '.*a_file' is not a directory"):
        get_processor("mrpc", str(tmp_path / "a_file"))
