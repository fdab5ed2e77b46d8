"""The shape of the code, as docs/architecture.md draws it: imports run downward only.

Given every ``import`` in src/knetsim (function-level ones too: a lazy import is still a dependency),
then no two modules import each other, directly or around a circle, and no package imports one
drawn above it. The five programs of the live cluster are five packages in the order
apiserver < container < controllers < kubelet < daemon: the server never imports a controller, the
kubelet or the daemon that wires them.

To redraw the map yourself: ``python tests/test_architecture.py`` prints each package's arrows.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

# Lowest first. A package may import only packages on lower floors (never one on its own floor).
FLOORS: list[set[str]] = [
    {"model"},
    {"printers", "sources"},
    {"cluster"},
    {"dns", "dataplane", "policy", "ingress", "gateway"},
    {"network"},
    {"kernel", "nginxproof"},
    {"doctor", "migration", "explorer"},
    {"diff"},  # compares two sides with the answers of the floors below
    {"api"},
    # The live cluster: kube-apiserver, what runs in a container, kube-controller-manager, the node,
    # and the one process that runs them all.
    {"apiserver"},
    {"container"},
    {"controllers"},
    {"kubelet"},
    {"daemon"},
    {"labs"},
    {"cli"},
]
FLOOR_OF = {package: floor for floor, packages in enumerate(FLOORS) for package in packages}


def modules() -> dict[str, Path]:
    found = {}
    for path in (SRC / "knetsim").rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """module → the project modules it imports (``from pkg import name`` counts ``pkg.name`` when that
    is a module). Parsed once per process: three tests read it, and parsing every module takes seconds."""
    mods = modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                submodules = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in mods]
                # `from . import x` of a submodule x depends on x; the package only if a name is defined there.
                candidates = submodules + ([target] if len(submodules) < len(node.names) else [])
            elif isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                continue
            graph[name].update(c for c in candidates if c in mods and c != name)
    return graph


def package_of(module: str) -> str | None:
    parts = module.split(".")
    # knetsim/__init__ is the public face (``knetsim.Cluster``, loaded on first use), not a floor.
    return parts[1] if len(parts) > 1 else None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circle() -> None:
    assert cycles(import_graph()) == []


def test_every_package_has_a_floor() -> None:
    packages = {p for m in modules() if (p := package_of(m)) is not None}
    assert packages - set(FLOOR_OF) == set(), "a new package: give it a floor here and in docs/architecture.md"


def test_imports_run_downward_only() -> None:
    upward = []
    for module, targets in sorted(import_graph().items()):
        source = package_of(module)
        for target in sorted(targets):
            dest = package_of(target)
            if source is None or dest is None or source == dest:
                continue
            if FLOOR_OF[dest] >= FLOOR_OF[source]:
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_the_api_server_imports_no_program_above_it() -> None:
    # kube-apiserver does not link the controllers, the kubelet or the container runtime: the daemon wires them.
    above = {"container", "controllers", "kubelet", "daemon"}
    reached = {package_of(t) for m, ts in import_graph().items() if package_of(m) == "apiserver" for t in ts}
    assert reached & above == set()


if __name__ == "__main__":
    arrows: dict[str, set[str]] = defaultdict(set)
    for module, targets in import_graph().items():
        for target in targets:
            a, b = package_of(module), package_of(target)
            if a and b and a != b:
                arrows[a].add(b)
    for floor in reversed(FLOORS):
        for package in sorted(floor):
            print(f"{package:12} -> {', '.join(sorted(arrows.get(package, ()))) or '-'}", file=sys.stdout)
