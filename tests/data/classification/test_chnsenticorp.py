"""ChnSentiCorp as ERNIE/UER ship it (`label<TAB>text_a`, a header) through the generic task with
docs/chinese.md's flags: every row read, the labels as the files hold them."""

import collections

import pytest

from official_bert.data.classification.examples import get_processor
from tests.conftest import SHARED_DATA

CHNSENTICORP = SHARED_DATA / "zh" / "chnsenticorp"


@pytest.mark.skipif(not CHNSENTICORP.exists(), reason=f"reads ChnSentiCorp from {SHARED_DATA}")
def test_chnsenticorp_through_the_generic_task():
    processor = get_processor(
        "generic", str(CHNSENTICORP), text_a_column="text_a", label_column="label"
    )
    assert processor.get_labels() == ["0", "1"]
    counts = {
        split: collections.Counter(example.label for example in processor.get_examples(split))
        for split in ("train", "dev", "test")
    }
    # Counted in the files with `cut -f1 | sort | uniq -c` (header excluded).
    assert counts == {
        "train": {"0": 4801, "1": 4799},
        "dev": {"0": 607, "1": 593},
        "test": {"0": 592, "1": 608},
    }
    first = processor.get_examples("test")[0]
    assert first.text_a.startswith("这个宾馆比较陈旧了") and first.label == "1"
