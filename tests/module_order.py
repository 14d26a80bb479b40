"""The longest test modules first, so that the test workers of `make test` finish together.

`pytest -n 2 --dist loadfile` hands each worker whole modules in the order it is given them, the
next one queued when a worker's last two tests are left. By default xdist orders them by their
number of tests, which says little about their time here: a module of one test may train a
model for half a minute, and when such modules come last, one worker still has a minute of work
queued while the other has none. With `--no-loadscope-reorder` xdist keeps the collection order,
and `order_longest_first` makes that the order of the seconds each module took in a recorded run
(`module_durations.json`, beside this file): the long modules start first and the short ones
fill in at the end. A module the record does not know counts as a median one; a stale record
costs some balance, never a test. Tests keep their order within a module, and what a test
checks does not depend on the order of modules.

`pytest ... --record-module-durations` rewrites the record's entries for the modules that ran
(setup, call and teardown of their tests, module fixtures included) and drops those of modules
that no longer exist. Durations are the recording machine's: only their order matters.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import statistics

RECORD = pathlib.Path(__file__).with_name("module_durations.json")
REPO_ROOT = RECORD.parents[1]


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def read_record(path: pathlib.Path = RECORD) -> dict[str, float]:
    """Seconds per module path (as in node ids, relative to the repository root); {} if absent."""
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))["seconds"]


def order_longest_first(items: list, record: dict[str, float]) -> None:
    """Sorts pytest items in place: modules by recorded seconds, longest first; stable within."""
    if not record:
        return
    unknown = statistics.median(record.values())
    items.sort(key=lambda item: -record.get(_module(item.nodeid), unknown))


class DurationRecorder:
    """A pytest plugin: sums the test reports' durations per module and, at the end of the
    session, writes them into the record."""

    def __init__(self, path: pathlib.Path = RECORD):
        self.path = path
        self.seconds = collections.defaultdict(float)

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[_module(report.nodeid)] += report.duration

    def pytest_sessionfinish(self) -> None:
        if not self.seconds:
            return
        record = {
            module: seconds
            for module, seconds in read_record(self.path).items()
            if (REPO_ROOT / module).exists()
        }
        record.update(self.seconds)
        text = json.dumps(
            {
                "about": "seconds per test module in one run; tests/module_order.py orders by them",
                "seconds": {module: round(record[module], 1) for module in sorted(record)},
            },
            indent=1,
        )
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        temporary.write_text(text + "\n", encoding="utf-8")
        os.replace(temporary, self.path)
