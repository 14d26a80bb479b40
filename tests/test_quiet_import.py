"""import_quietly leaves out setuptools' pkg_resources warning of a library's import, and only
that one."""

import sys
import warnings

import pytest

from official_bert.quiet_import import import_quietly


@pytest.mark.parametrize("also_warns", [False, True])
def test_the_pkg_resources_warning_of_an_import_is_left_out(tmp_path, monkeypatch, also_warns):
    name = f"imports_pkg_resources_{int(also_warns)}"
    lines = [
        "import warnings",
        # The words setuptools 81 prints when pkg_resources is imported.
        "warnings.warn('pkg_resources is deprecated as an API. See https://setuptools.pypa.io',"
        " UserWarning)",
    ]
    if also_warns:
        lines.append("warnings.warn('something else', UserWarning)")
    (tmp_path / f"{name}.py").write_text("\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = import_quietly(name)
    assert module.__name__ == name
    assert [str(w.message) for w in caught] == (["something else"] if also_warns else [])


def test_a_missing_module_raises_import_error():
    with pytest.raises(ImportError):
        import_quietly("no_such_module_here")
