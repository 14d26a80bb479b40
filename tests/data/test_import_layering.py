"""The modules of official_bert/data import each other without cycles: task modules import the
processor base and registry (classification/data_processor.py), never the lookup over all tasks
(classification/examples.py), and no import hides inside a function to dodge a cycle."""

import ast

from tests.conftest import REPO_ROOT

DATA = REPO_ROOT / "official_bert" / "data"


def _module_name(path):
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path):
    """(imported official_bert modules, names of those imported inside a function)."""
    imported, local = set(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("official_bert"):
            names = {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            names = {alias.name for alias in node.names if alias.name.startswith("official_bert")}
        else:
            continue
        imported |= names
        if node.col_offset > 0:
            local |= names
    return imported, local


def test_the_data_modules_import_each_other_without_cycles():
    paths = {_module_name(path): path for path in DATA.rglob("*.py")}
    graph, hidden = {}, {}
    for name, path in paths.items():
        imported, local = _imports(path)
        graph[name] = {module for module in imported if module in paths and module != name}
        hidden[name] = {module for module in local if module in paths}
    assert not {name: modules for name, modules in hidden.items() if modules}
    done, on_path = set(), []

    def visit(name):
        assert name not in on_path, "import cycle: " + " -> ".join([*on_path, name])
        if name in done:
            return
        on_path.append(name)
        for module in sorted(graph[name]):
            visit(module)
        on_path.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)
    base = "official_bert.data.classification.data_processor"
    lookup = "official_bert.data.classification.examples"
    for task_module in ("classification.glue_processors", "tagging.examples"):
        assert base in graph[f"official_bert.data.{task_module}"]
        assert lookup not in graph[f"official_bert.data.{task_module}"]
    # The processor base imports no module of data/ (its file decoding is official_bert.utf8_text,
    # outside the package).
    assert graph[base] == set(), graph[base]
