"""The agents package has no import cycle (issues #15, #33): its packages form layers, and so do its modules.

The packages (docs/architecture.md): the leaves ``names`` and ``spec`` <- ``players`` <- ``evaluation`` <-
``training``; ``parsers`` reads ``names`` and ``players``; ``play`` (terminal play) and ``cli`` (the console
scripts) sit on top. Inside ``players``: network (torch only) <- policy <- baselines <- players <- pimc <-
registry. Every import counts, also the ones inside functions (a lazy import cycle is still a cycle: it only
moves the failure to the call that closes it). The graph is read from the source with ``ast``; then every
module is imported first, in a fresh interpreter, so no module relies on another having been imported before it.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "agents"

# No import goes back up (issue #33): the search player turns its rollout and prior specs into players with
# agents/players/players.py (the players that are not a search), under it; agents/players/registry.py, on
# top, builds the search players and hands every other spec to players.py.
ALLOWED_BACK_EDGES: set[tuple[str, str]] = set()

# What each package of agents/ may import (issue #33, item 5): the players know nothing of training or
# evaluation, evaluation nothing of training; spec and names are leaves. No exemption.
PACKAGE_MAY_IMPORT: dict[str, set[str]] = {
    "names": set(),
    "spec": set(),
    "players": {"names", "spec"},
    "parsers": {"names", "players"},
    "evaluation": {"names", "spec", "players", "parsers"},
    "training": {"names", "spec", "players", "evaluation", "parsers"},
    "play": {"names", "spec", "players", "evaluation", "parsers"},
    "cli": {"parsers", "players", "evaluation", "training", "play"},
}


def _module_name(path: Path) -> str:
    """``agents/players/pimc.py`` -> ``players.pimc`` (the dotted name under ``agents``)."""
    return ".".join(path.relative_to(AGENTS).with_suffix("").parts)


def _modules() -> list[Path]:
    """Every module of agents/ but the package files and the benchmarks (a tool on top, like the tests)."""
    return [p for p in sorted(AGENTS.rglob("*.py"))
            if p.name not in ("__init__.py", "__main__.py") and "bench" not in p.relative_to(AGENTS).parts]


def _resolve(parts: list[str], names: list[str]) -> list[str]:
    """The agents modules that ``from <parts> import <names>`` imports (``parts`` starts with "agents")."""
    rel = parts[1:]
    if (AGENTS.joinpath(*rel).with_suffix(".py")).is_file():
        return [".".join(rel)]
    subs = [".".join([*rel, n]) for n in names if AGENTS.joinpath(*rel, f"{n}.py").is_file()]
    return subs or ([".".join(rel)] if rel and AGENTS.joinpath(*rel).is_dir() else [])


def _agents_imports(path: Path) -> dict[str, bool]:
    """{imported agents module (dotted, under agents): imported at module level?} of one file of agents/."""
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    package = ["agents", *path.relative_to(AGENTS).parent.parts]
    out: dict[str, bool] = {}
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            parts = base + (node.module.split(".") if node.module else [])
            if parts[:1] == ["agents"]:
                targets = _resolve(parts, [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("agents."):
                    targets += _resolve(a.name.split("."), [])
        for t in targets:
            out[t] = out.get(t, False) or id(node) in top
    return out


def _graph() -> dict[str, dict[str, bool]]:
    return {_module_name(p): _agents_imports(p) for p in _modules()}


def _package(module: str) -> str:
    """The package of a module of agents/ (``players.pimc`` -> ``players``); a top-level module is its own."""
    return module.split(".")[0]


def _package_graph() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m, deps in _graph().items():
        out.setdefault(_package(m), set()).update(_package(d) for d in deps if _package(d) != _package(m))
    return out


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


def test_the_graph_reader_resolves_relative_imports_across_the_packages():
    """``from ..spec import make_spec`` in agents/players/ is agents.spec; ``from . import heuristic`` a sibling."""
    g = _graph()
    assert "spec" in g["players.policy"] and "players.heuristic" in g["players.baselines"]
    assert "players.players" in g["parsers"] and "training.ppo" in g["cli"]
    assert g["evaluation.arena"]["names"] and not g["evaluation.arena"]["players.registry"]  # top / inside a def


def test_agents_import_graph_is_acyclic_counting_imports_inside_functions():
    g = _graph()
    assert {"players.network", "players.policy", "training.ppo", "players.registry", "evaluation.evaluate",
            "spec", "cli"} <= set(g)  # the parser sees the packages
    edges = {m: {d for d in deps if (m, d) not in ALLOWED_BACK_EDGES} for m, deps in g.items()}
    cycle = _cycle(edges)
    assert cycle is None, f"import cycle in agents/: {' -> '.join(cycle)}"


def test_the_package_graph_is_acyclic_and_goes_players_evaluation_training():
    """Issue #33, item 5: players import no training and no evaluation, evaluation no training; no exemption."""
    pg = _package_graph()
    assert {"players", "training", "evaluation", "play", "spec", "names", "parsers", "cli"} == set(pg)
    cycle = _cycle(pg)
    assert cycle is None, f"import cycle between the packages of agents/: {' -> '.join(cycle)}"
    for package, deps in pg.items():
        extra = deps - PACKAGE_MAY_IMPORT[package]
        assert not extra, f"agents/{package} imports {sorted(extra)}"
    assert "training" not in pg["players"] | pg["evaluation"] and "evaluation" not in pg["players"]


def test_the_package_files_import_nothing_so_a_module_costs_only_its_own_imports():
    """``agents/{players,training,evaluation,play}/__init__.py`` are docstrings; ``agents/__init__.py``
    offers ``load_policy`` and ``train`` lazily (a module ``__getattr__``), so ``import agents`` stays cheap."""
    for init in sorted(AGENTS.glob("*/__init__.py")):
        if init.parent.name != "bench":
            assert not _imported_modules(init), f"{init.relative_to(ROOT)} imports something"
    top = ast.parse((AGENTS / "__init__.py").read_text())
    assert not [n for n in top.body if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_agents_offers_load_policy_and_train_lazily_and_its_import_loads_no_torch():
    code = ("import sys, agents\nbefore = sorted(m for m in ('torch', 'numba') if m in sys.modules)\n"
            "import agents.players.registry as r, agents.training.ppo as p\n"
            "print(before, agents.load_policy is r.load_policy, agents.train is p.train, 'load_policy' in dir(agents))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["[]", "True", "True", "True"]
    import agents

    try:
        agents.no_such_name  # noqa: B018
    except AttributeError as e:
        assert "no attribute 'no_such_name'" in str(e)
    else:
        raise AssertionError("agents.no_such_name did not raise AttributeError")


def test_no_back_edge_is_exempted_and_the_search_reaches_players_from_below():
    g = _graph()
    assert ALLOWED_BACK_EDGES == set()
    assert "players.registry" not in g["players.pimc"] and "players.players" in g["players.pimc"]
    assert "players.pimc" in g["players.registry"] and "players.registry" not in g["players.players"]


def test_the_network_is_its_own_module_and_the_policy_side_does_not_import_the_trainer():
    g = _graph()
    # leaves: torch (+ numba)
    assert set(g["players.network"]) <= {"players.sparse_input"} and set(g["players.sparse_input"]) == set()
    assert "training.ppo" not in g["players.policy"] and "players.network" in g["players.policy"]
    # nothing depends on the trainer but the console scripts on top of everything (agents/cli.py)
    assert not any("training.ppo" in deps for m, deps in g.items() if m not in ("training.ppo", "cli"))
    assert not any("cli" in deps for deps in g.values())
    assert set(g["spec"]) == set() and set(g["names"]) == set()


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
    """``agents.players.registry.load_policy`` takes any player spec; a checkpoint's network is
    ``load_network_policy``."""
    import agents.players.policy
    import agents.players.registry

    assert not hasattr(agents.players.policy, "load_policy")
    assert callable(agents.players.policy.load_network_policy)
    assert callable(agents.players.registry.load_policy)


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
    for name in ("spec", "players/network", "players/policy", "players/registry", "players/sb3", "training/ppo",
                 "training/rollout", "evaluation/evaluate", "evaluation/arena"):
        bad = {m for m in _imported_modules(AGENTS / f"{name}.py") if m.startswith(rules_level)}
        assert not bad, f"agents/{name}.py imports {sorted(bad)}"
