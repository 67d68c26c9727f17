"""The shape of the code, kept true: no import cycles, rewards apart from the trust boundary, a client that
needs no engine, modules of at most 500 lines, and one policy check shared by the server and the client."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from rewardkit.client import check_funcs
from rewardkit.policy import RemotePolicy
from rewardkit.spec import MAX_SPECS, PolicyError, RewardSpec, UnknownRewardError

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 500


def _modules(package: str) -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every module of ``known`` that ``name`` imports, at the top or inside a function."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            # `from pkg import mod` imports the module; `from mod import name` imports mod
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        out.update(t for t in targets if t in known and t != name)
    return out


def _graph() -> dict[str, set[str]]:
    modules = {**_modules("rewardkit"), **_modules("service"), **_modules("swift_plugins")}
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for w in graph[todo.pop()] - seen:
            seen.add(w)
            todo.append(w)
    return seen


def test_the_walker_sees_imports_at_the_top_and_inside_functions() -> None:
    graph = _graph()
    assert {"rewardkit.core", "rewardkit.spec"} <= graph["rewardkit.policy"]
    assert "rewardkit.client" in graph["rewardkit.adapters.env"]  # imported inside a function there
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_rewards_import_no_trust_boundary_and_the_client_no_engine() -> None:
    graph = _graph()
    boundary = {"rewardkit.policy", "rewardkit.client"} | {m for m in graph if m.startswith("service")}
    for name, imported in graph.items():
        if name.startswith("rewardkit.rewards"):
            assert not imported & boundary, (name, imported & boundary)
    reached = _reachable(graph, "rewardkit.client")
    assert not reached & {"rewardkit", "rewardkit.engine", "rewardkit.registry", "rewardkit.policy"}, reached


def test_every_module_is_at_most_500_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for package in ("rewardkit", "service", "swift_plugins")
        for path in (ROOT / package).rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def _published(policy: RemotePolicy) -> dict[str, Any]:
    """What ``GET /rewards`` publishes of the policy, as a client reads it."""
    return {"rewards": [{"name": name, "params": dict(policy.table[name])} for name in policy.table]}


def _routes(width: int, inner: int) -> RewardSpec:
    """A route of ``width`` routes, each a route of ``inner`` format rewards: 1 + width * (1 + inner)."""
    leaf = {"name": "route", "params": {"routes": {f"r{j}": "format" for j in range(inner)}}}
    return RewardSpec("route", {"routes": {f"k{i}": leaf for i in range(width)}})


REFUSED = [
    (_routes(64, 3), "builds at most 256 rewards"),  # 257 rewards
    (RewardSpec("math", {"workers": 8}), "'workers' is a server setting"),
    (RewardSpec("math", {"timeout_s": 61}), "'timeout_s' is 61, over"),
    (RewardSpec("math", {"timeout_s": float("nan")}), "'timeout_s' is nan, over"),
    (RewardSpec("math", {"threads": 2}), "has no parameter 'threads'"),
    (RewardSpec("route", {"routes": {f"k{i}": "format" for i in range(65)}}), "holds 65 rewards; at most 64"),
    (RewardSpec("route", {"routes": {"a": {"name": "math", "params": {"workers": 1}}}}), "server setting"),
    (RewardSpec("route", {"routes": {"a": {"name": "math", "param": {}}}}), "not param"),
    (RewardSpec("cosine", {"accuracy": {"name": "math", "params": {"timeout_s": 1e9}}}), "over"),
    (RewardSpec("nope"), "reward 'nope'"),
]


@pytest.mark.parametrize(("spec", "message"), REFUSED, ids=[m for _, m in REFUSED])
def test_the_server_and_the_client_refuse_alike_in_one_function(spec: RewardSpec, message: str) -> None:
    """The client checks what the server published; both refusals are raised by rewardkit.spec.check."""
    policy = RemotePolicy()
    refusals = []
    with pytest.raises(PolicyError, match=message) as server:
        policy.build(spec.name, spec.params)
    refusals.append(server)
    with pytest.raises(PolicyError, match=message) as client:
        check_funcs(_published(policy), [spec], "http://rk")
    refusals.append(client)
    for refused in refusals:
        assert Path(refused.traceback[-1].path).name == "spec.py", refused.traceback[-1]
        assert (spec.name == "nope") == isinstance(refused.value, UnknownRewardError)
    assert "http://rk" not in str(server.value)  # the client's words name the server it checked against


def test_what_one_accepts_the_other_accepts() -> None:
    policy = RemotePolicy()
    fits = _routes(63, 3)  # 1 + 63 * 4 = 253 rewards
    assert 1 + 63 * 4 <= MAX_SPECS
    [sent] = check_funcs(_published(policy), [fits], "http://rk")
    assert sent == fits
    assert len(policy.build(fits.name, fits.params).params()["routes"]) == 63
