"""The agents package has no import cycle (issue #15): its modules form layers.

network (torch only) <- policy <- baselines <- players <- pimc <- registry <- evaluate / ppo / arena / human
<- cli (the console scripts); rollout, names and explain are leaves, parsers only reads names and players.
Every import counts, also the ones inside functions (a lazy import cycle is still a cycle: it only moves the
failure to the call that closes it). The graph is read from the source with ``ast``; then every module is
imported first, in a fresh interpreter, so no module relies on another having been imported before it.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "agents"

# No import goes back up (issue #33): the search player turns its rollout and prior specs into players with
# agents/players.py (the players that are not a search), under it; agents/registry.py, on top, builds the
# search players and hands every other spec to players.py.
ALLOWED_BACK_EDGES: set[tuple[str, str]] = set()


def _agents_imports(path: Path) -> dict[str, bool]:
    """{imported agents module: imported at module level?} of one file of agents/."""
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    out: dict[str, bool] = {}

    def add(name: str, node: ast.AST) -> None:
        if (AGENTS / f"{name}.py").is_file():
            out[name] = out.get(name, False) or id(node) in top

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level == 1:
                names = [mod.split(".")[0]] if mod else [a.name for a in node.names]
            elif mod == "agents":
                names = [a.name for a in node.names]
            elif mod.startswith("agents."):
                names = [mod.split(".")[1]]
            else:
                names = []
            for n in names:
                add(n, node)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("agents."):
                    add(a.name.split(".")[1], node)
    return out


def _graph() -> dict[str, dict[str, bool]]:
    return {p.stem: _agents_imports(p) for p in sorted(AGENTS.glob("*.py")) if p.stem not in ("__init__", "__main__")}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path ``[a, b, ..., a]``, or None when it is acyclic."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state and (found := visit(d)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle_and_accepts_layers():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_agents_import_graph_is_acyclic_counting_imports_inside_functions():
    g = _graph()
    assert {"network", "policy", "ppo", "registry", "evaluate"} <= set(g)  # the parser sees the package
    edges = {m: {d for d in deps if (m, d) not in ALLOWED_BACK_EDGES} for m, deps in g.items()}
    cycle = _cycle(edges)
    assert cycle is None, f"import cycle in agents/: {' -> '.join(cycle)}"


def test_no_back_edge_is_exempted_and_the_search_reaches_players_from_below():
    g = _graph()
    assert ALLOWED_BACK_EDGES == set()
    assert "registry" not in g["pimc"] and "players" in g["pimc"]
    assert "pimc" in g["registry"] and "registry" not in g["players"]


def test_the_network_is_its_own_module_and_the_policy_side_does_not_import_the_trainer():
    g = _graph()
    assert set(g["network"]) <= {"sparse_input"} and set(g["sparse_input"]) == set()  # leaves: torch (+ numba)
    assert "ppo" not in g["policy"] and "network" in g["policy"]
    # nothing depends on the trainer but the console scripts on top of everything (agents/cli.py)
    assert not any("ppo" in deps for m, deps in g.items() if m not in ("ppo", "cli"))
    assert not any("cli" in deps for deps in g.values())


def test_every_agents_module_imports_first_in_a_fresh_interpreter():
    mods = sorted(_graph())
    script = (
        "import importlib, sys\n"
        f"mods = {mods!r}\n"
        "for first in mods:\n"
        "    for k in [k for k in sys.modules if k == 'agents' or k.startswith('agents.')]:\n"
        "        del sys.modules[k]\n"
        "    importlib.import_module('agents.' + first)\n"
        "    for m in mods:\n"
        "        importlib.import_module('agents.' + m)\n"
        "print('ok', len(mods))\n"
    )
    r = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["ok", str(len(mods))]


def test_two_load_policy_functions_no_longer_share_a_name():
    """``agents.registry.load_policy`` takes any player spec; a checkpoint's network is ``load_network_policy``."""
    import agents.policy
    import agents.registry

    assert not hasattr(agents.policy, "load_policy")
    assert callable(agents.policy.load_network_policy)
    assert callable(agents.registry.load_policy)


# --- the layers of tarot_env and agents (docs/architecture.md) ------------------------------------------------
def _imported_modules(path: Path) -> set[str]:
    """Every absolute module name ``path`` imports (also inside functions)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_the_rules_layer_imports_neither_pettingzoo_nor_gymnasium_nor_torch_nor_agents():
    pkg = ROOT / "tarot_env"
    files = [pkg / "cards.py", pkg / "engine.py", pkg / "config.py", pkg / "sampler.py", pkg / "view.py",
             *sorted((pkg / "rules").glob("*.py")), *sorted((pkg / "vector").glob("*.py"))]
    for f in files:
        bad = {m for m in _imported_modules(f) if m.split(".")[0] in {"pettingzoo", "gymnasium", "torch", "agents"}}
        assert not bad, f"{f.relative_to(ROOT)} imports {sorted(bad)}: the rules layer is plain numpy"


def test_the_learning_side_of_agents_reaches_the_games_only_through_envs_and_make_vec():
    """The trainer, the players and the tools know no rules module: a game is a GameSpec (make_spec)."""
    rules_level = ("tarot_env.rules", "tarot_env.engine", "tarot_env.cards")
    for name in ("network", "policy", "ppo", "rollout", "evaluate", "arena", "registry", "sb3"):
        bad = {m for m in _imported_modules(AGENTS / f"{name}.py") if m.startswith(rules_level)}
        assert not bad, f"agents/{name}.py imports {sorted(bad)}"
