"""The library's modules import each other without cycles: data flows one way (text -> data ->
models -> tasks -> training -> export), and no module hides a cycle in a function-local import."""

import ast
import pathlib

import official_bert

PACKAGE_ROOT = pathlib.Path(official_bert.__file__).parent


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """{module: the official_bert modules it imports anywhere in its file (functions too)}."""
    modules = {_module_name(path): path for path in PACKAGE_ROOT.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from package import module` imports the module; `from module import name`
                # the module.
                targets = [
                    f"{node.module}.{alias.name}"
                    if f"{node.module}.{alias.name}" in modules
                    else node.module
                    for alias in node.names
                ]
            else:
                continue
            edges.update(target for target in targets if target in modules and target != name)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(module):
        state[module] = "open"
        stack.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return stack[stack.index(target) :] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return None


def test_the_finder_sees_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_graph_holds_every_module_and_its_imports():
    graph = import_graph()
    assert "official_bert.tasks.driver" in graph
    assert "official_bert.training.runner" in graph["official_bert.tasks.driver"]


def test_no_import_cycle_in_the_library():
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle)
