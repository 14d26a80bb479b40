"""tests/module_order.py: the test modules in order of their recorded seconds, and the record."""

import json
import types

from tests import module_order


def _items(*nodeids):
    return [types.SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def test_longest_modules_go_first_and_tests_keep_their_order_within_a_module():
    items = _items(
        "tests/a.py::test_1",
        "tests/a.py::test_2",
        "tests/b.py::test_1",
        "tests/new.py::test_1",
        "tests/c.py::test_1[x]",
        "tests/b.py::test_2",
    )
    record = {"tests/a.py": 2.0, "tests/b.py": 40.0, "tests/c.py": 10.0, "tests/d.py": 5.0}
    module_order.order_longest_first(items, record)
    # new.py is unknown: it counts as the median of the record (7.5 s), between c and d's.
    assert [item.nodeid for item in items] == [
        "tests/b.py::test_1",
        "tests/b.py::test_2",
        "tests/c.py::test_1[x]",
        "tests/new.py::test_1",
        "tests/a.py::test_1",
        "tests/a.py::test_2",
    ]


def test_without_a_record_the_collection_order_stays():
    items = _items("tests/z.py::test_1", "tests/a.py::test_1")
    module_order.order_longest_first(items, {})
    assert [item.nodeid for item in items] == ["tests/z.py::test_1", "tests/a.py::test_1"]


def test_the_recorder_sums_each_module_and_keeps_what_did_not_run(tmp_path):
    record = tmp_path / "module_durations.json"
    record.write_text(
        json.dumps(
            {
                "seconds": {
                    "tests/test_module_order.py": 99.0,  # ran again: replaced
                    "tests/conftest.py": 3.0,  # exists, did not run: kept
                    "tests/gone_since.py": 7.0,  # no such file: dropped
                }
            }
        )
    )
    recorder = module_order.DurationRecorder(record)
    for nodeid, duration in [
        ("tests/test_module_order.py::test_a", 0.3),  # setup
        ("tests/test_module_order.py::test_a", 1.5),  # call
        ("tests/test_module_order.py::test_b", 0.5),
        ("tests/tasks/test_squad.py::test_c[v2]", 12.0),
    ]:
        recorder.pytest_runtest_logreport(types.SimpleNamespace(nodeid=nodeid, duration=duration))
    recorder.pytest_sessionfinish()
    assert module_order.read_record(record) == {
        "tests/conftest.py": 3.0,
        "tests/tasks/test_squad.py": 12.0,
        "tests/test_module_order.py": 2.3,  # summed, rounded to 0.1 s
    }
    assert sorted(path.name for path in tmp_path.iterdir()) == ["module_durations.json"]


def test_a_session_that_ran_nothing_leaves_the_record_as_it_was(tmp_path):
    record = tmp_path / "module_durations.json"
    record.write_text('{"seconds": {"tests/gone_since.py": 7.0}}')
    module_order.DurationRecorder(record).pytest_sessionfinish()
    assert record.read_text() == '{"seconds": {"tests/gone_since.py": 7.0}}'
