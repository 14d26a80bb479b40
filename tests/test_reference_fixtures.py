"""The committed golden fixtures (tests/fixtures/README.md) are all there, unchanged since they
were copied from the outputs of the original code and of the reference implementation."""

import hashlib

from tests.conftest import FIXTURES, MINILM_FIXTURE, ORIGINAL_TINY
from tests.fixtures.copy_reference_outputs import REFERENCE_FILES, manifest_entries


def test_every_reference_file_is_committed_with_its_recorded_checksum():
    entries = manifest_entries()
    expected = [f"{folder}/{name}" for folder, names in REFERENCE_FILES.items() for name in names]
    assert [relative for relative, _ in entries] == expected
    for relative, digest in entries:
        path = FIXTURES / relative
        assert path.is_file(), f"golden fixture missing: {path}"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"{path} changed"


def test_the_conftest_paths_are_the_committed_folders():
    assert {ORIGINAL_TINY.name, MINILM_FIXTURE.name} == set(REFERENCE_FILES)
    assert ORIGINAL_TINY.parent == MINILM_FIXTURE.parent == FIXTURES
