"""The package's import graph keeps the architecture docs/ describes.

Every module's imports are read with `ast`, those inside functions and `TYPE_CHECKING`
blocks included, and checked against the rules: no cycle between modules; the client
knows no DataFrame; the emulator shares only the signing primitive with the rest; data
flows client -> frames -> store -> analysis -> plots/report, never back; the widgets and
the CLI use only public API. Imports under `TYPE_CHECKING` count for every rule except
cycles (an import for types alone creates no cycle at run time).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent / "toolkit"

# Public API: what a user, the widgets and the CLI may import.
PUBLIC = frozenset(
    {
        "toolkit",
        "toolkit.errors",
        "toolkit.models",
        "toolkit.config",
        "toolkit.client",
        "toolkit.frames",
        "toolkit.store",
        "toolkit.analysis",
        "toolkit.analysis.sql",  # the run figures as SQL, for other engines: `toolkit sql`
        "toolkit.analysis.run_check",  # `toolkit store check` on the run stages kept
        "toolkit.webhooks",
        "toolkit.emulator",
        "toolkit.conformance",  # `toolkit conformance`: checks a service, as a user would
        "toolkit.plots",
        "toolkit.reporting",
        "toolkit.batch",
        "toolkit.pricing",
        "toolkit.formatting",
        "toolkit.files",  # files written whole or not at all: the journals beside a store
        "toolkit.metrics",  # the registry of figures: every surface's labels
        "toolkit.watch",
        "toolkit.agency",  # settings of several workspaces: part of the configuration
    }
)
# Data flows from the service towards the pictures: a part imports only parts before it.
FLOW = ("toolkit.client", "toolkit.frames", "toolkit.store", "toolkit.analysis")
DRAWING = ("toolkit.plots", "toolkit.reporting")
DATAFRAME_LIBRARIES = ("pandas", "pyarrow", "duckdb", "numpy")


@dataclass(frozen=True)
class Edge:
    source: str
    target: str  # a toolkit module, or a top-level third-party name
    line: int
    typing_only: bool

    def __str__(self) -> str:
        kind = " (TYPE_CHECKING)" if self.typing_only else ""
        return f"{self.source} -> {self.target} (line {self.line}){kind}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE_ROOT.rglob("*.py"))}


def within(module: str, part: str) -> bool:
    return module == part or module.startswith(part + ".")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, typing_only: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """Every import statement anywhere in the tree, and whether it is for types only."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, typing_only
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), True)
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), typing_only)
        else:
            yield from _imports(node, typing_only)


def _target(name: str) -> str:
    """A toolkit module by its dotted name, or the top-level name of a library."""
    if not within(name, "toolkit"):
        return name.split(".")[0]
    while name not in MODULES:
        name = name.rsplit(".", 1)[0]
    return name


def edges_of(module: str) -> list[Edge]:
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Edge] = []
    for node, typing_only in _imports(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            assert isinstance(node, ast.ImportFrom)
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                # `from package import submodule` imports the submodule; any other name
                # comes from the package's __init__.
                targets.append(submodule if submodule in MODULES else base)
        for target in targets:
            resolved = _target(target)
            if resolved != module:
                found.append(Edge(module, resolved, node.lineno, typing_only))
    return found


EDGES = [edge for module in MODULES for edge in edges_of(module)]
INTERNAL = [edge for edge in EDGES if within(edge.target, "toolkit")]


def _cycles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for edge in edges:
        if not edge.typing_only:
            graph[edge.source].add(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for after in sorted(graph[node]):
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in on_stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_is_read():
    # Guards the reader itself: known edges of each kind are found.
    edges = {(e.source, e.target, e.typing_only) for e in EDGES}
    assert ("toolkit.client.clients", "toolkit.client.flows", False) in edges
    assert ("toolkit.frames.fetcher", "toolkit.client", True) in edges  # TYPE_CHECKING
    assert ("toolkit.emulator.delivery.deliveries", "toolkit._signing", False) in edges
    assert ("toolkit.client.clients", "httpx", False) in edges
    assert any(e.source == "toolkit.demo" and e.target == "toolkit.emulator.serving" for e in EDGES)


def test_no_import_cycles():
    assert _cycles(INTERNAL) == []


def test_a_cycle_is_found_and_a_typing_only_one_is_not():
    back = Edge("toolkit.store.events", "toolkit.store.query", 1, typing_only=False)
    assert _cycles([*INTERNAL, back]) == [["toolkit.store.events", "toolkit.store.query"]]
    assert _cycles([*INTERNAL, Edge(back.source, back.target, 1, typing_only=True)]) == []


def test_the_client_knows_no_dataframe():
    wrong = [
        str(e)
        for e in EDGES
        if within(e.source, "toolkit.client")
        and (e.target in DATAFRAME_LIBRARIES or any(within(e.target, p) for p in FLOW[1:]))
    ]
    assert wrong == []


def test_the_emulator_shares_only_the_signing_primitive():
    wrong = [
        str(e)
        for e in INTERNAL
        if within(e.source, "toolkit.emulator")
        and not within(e.target, "toolkit.emulator")
        and e.target != "toolkit._signing"
    ]
    assert wrong == []


def test_nothing_imports_the_emulator_but_its_users():
    # The client and the data parts never depend on the emulator: it is a tool beside them.
    wrong = [
        str(e)
        for e in INTERNAL
        if within(e.target, "toolkit.emulator")
        and any(within(e.source, part) for part in (*FLOW, *DRAWING, "toolkit.webhooks"))
    ]
    assert wrong == []


def _stage(module: str) -> int | None:
    for number, part in enumerate(FLOW):
        if within(module, part):
            return number
    if any(within(module, part) for part in DRAWING):
        return len(FLOW)
    return None


def test_data_flows_one_way():
    wrong = []
    for e in INTERNAL:
        source, target = _stage(e.source), _stage(e.target)
        if source is not None and target is not None and target > source:
            wrong.append(str(e))
    assert wrong == []


def _not_public(part: str, allowed: frozenset[str]) -> list[str]:
    return [
        str(e)
        for e in INTERNAL
        if within(e.source, part) and not within(e.target, part) and e.target not in allowed
    ]


def test_the_cli_uses_only_public_api():
    # native_stderr (panics kept off descriptor 2) serves the command and the store, and
    # huge_pages (numpy's advice off) the command's process; neither is API.
    allowed = PUBLIC | {"toolkit.demo", "toolkit.native_stderr", "toolkit.huge_pages"}
    assert _not_public("toolkit.cli", allowed) == []


# Today the upload forms import toolkit.client.uploads (a private module).
def test_the_widgets_use_only_public_api():
    assert _not_public("toolkit.widgets", PUBLIC) == []


def test_each_public_analysis_function_is_the_function_its_module_defines():
    # A name rewrapped at import would make toolkit.analysis.runs.runs another object
    # than tk.analysis.runs: what a reader finds in the module must be what a user calls.
    import importlib
    import inspect

    import toolkit.analysis as analysis

    rewrapped = []
    for name in analysis.__all__:
        value = getattr(analysis, name)
        if not inspect.isfunction(value):
            continue
        home = importlib.import_module(inspect.unwrap(value).__module__)
        if getattr(home, name) is not value:
            rewrapped.append(name)
    assert rewrapped == []


# The exported members (httpx's tests/test_exported_members.py): what `toolkit` holds is
# what `__all__` lists, every error a user can catch is there and in the tree drawn in
# errors.py's docstring, and every listed name says what it is.


def test_every_public_name_on_toolkit_is_in_all():
    import inspect

    import toolkit

    # Submodules become attributes when imported (toolkit.errors, toolkit.client, ...)
    # and are reached by their path; `typing`'s names are the module's own tools. Every
    # other public name the package defines is listed.
    held = [
        name for name, value in vars(toolkit).items()
        if not name.startswith("_") and not inspect.ismodule(value)
        and getattr(value, "__module__", "").startswith("toolkit")
    ]  # fmt: skip
    assert sorted(set(held) - set(toolkit.__all__)) == []


def test_every_error_is_on_toolkit_and_in_the_drawn_tree():
    import inspect

    import toolkit
    from toolkit import errors

    classes = {
        name for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, Exception)
        and value.__module__ == errors.__name__
    }  # fmt: skip
    assert sorted(classes - set(toolkit.__all__)) == []
    assert all(getattr(toolkit, name) is getattr(errors, name) for name in classes)
    tree = (errors.__doc__ or "").split("```")[1]
    drawn = set(re.findall(r"^[\s│├└─]*(\w+)", tree, flags=re.MULTILINE))
    assert drawn == classes


# An exception defined outside errors.py never reaches a user: it is the emulator's own
# (a server apart, `tk.emulator`), or a signal its package catches and turns into one of
# errors.py's (or into a result). Each such signal says here why.
SIGNALS = {
    "toolkit.models.UnexpectedValue": "the client turns it into UnexpectedAnswer, naming the route",
    "toolkit.client.retry.BodyNotSent": "an httpx error the retry policy reads as never sent",
    "toolkit.watch.outbox.Undelivered": "a sender's stop; the outbox records it as a Delivery",
}


def _exceptions_outside_errors() -> set[str]:
    import importlib
    import inspect

    found = set()
    for module in MODULES:
        if module == "toolkit.errors" or within(module, "toolkit.emulator"):
            continue
        for name, value in vars(importlib.import_module(module)).items():
            if (
                inspect.isclass(value)
                and issubclass(value, Exception)  # not a stop (batch's UploadInterrupted)
                and not issubclass(value, Warning)
                and value.__module__ == module
                and not name.startswith("_")
            ):
                found.add(f"{module}.{name}")
    return found


def test_every_error_a_user_can_catch_is_in_errors_py():
    assert sorted(_exceptions_outside_errors() ^ set(SIGNALS)) == []


def test_every_name_in_all_has_a_docstring():
    import inspect

    import toolkit

    undocumented = []
    for name in toolkit.__all__:
        value = getattr(toolkit, name)
        doc = value.__doc__ if inspect.ismodule(value) else vars(value).get("__doc__")
        if callable(value) and not inspect.isclass(value):
            doc = value.__doc__
        # A dataclass without a docstring is given its signature, which says nothing.
        if not doc or not doc.strip() or doc.startswith(f"{name}("):
            undocumented.append(name)
    assert undocumented == []


TESTS_ROOT = Path(__file__).resolve().parent


def test_each_tests_folder_mirrors_a_package():
    # tests/analysis/test_x.py tests toolkit/analysis/: a folder of tests names a package.
    orphans = sorted(
        str(path.relative_to(TESTS_ROOT))
        for path in TESTS_ROOT.rglob("test_*.py")
        if path.parent != TESTS_ROOT
        and not (PACKAGE_ROOT / path.parent.relative_to(TESTS_ROOT) / "__init__.py").exists()
    )
    assert orphans == []


def test_no_flat_test_file_is_named_for_a_module_of_a_package_with_its_own_tests():
    # tests/test_forecast.py belongs in tests/analysis/, beside the other analysis tests.
    # A top-level module's tests stay flat (tests/test_pricing.py for toolkit/pricing.py).
    folders = {p.name for p in TESTS_ROOT.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    misplaced = []
    for path in sorted(TESTS_ROOT.glob("test_*.py")):
        name = path.stem.removeprefix("test_")
        if (PACKAGE_ROOT / f"{name}.py").exists():
            continue
        homes = [f for f in folders if f == name or (PACKAGE_ROOT / f / f"{name}.py").exists()]
        if homes:
            misplaced.append(f"{path.name} -> tests/{homes[0]}/")
    assert misplaced == []


LONG_MODULE = 400


def test_a_module_past_400_lines_says_why_at_its_top():
    # "Modules of 100-400 lines" (STYLE.md): a longer one says why it is one module, in
    # its docstring, so that the next reader does not split what belongs together.
    unexplained = [
        f"{name} ({lines} lines)"
        for name, path in MODULES.items()
        if (lines := len(path.read_text().splitlines())) > LONG_MODULE
        and "past 400 lines" not in (ast.get_docstring(ast.parse(path.read_text())) or "").lower()
    ]
    assert unexplained == []


def test_the_where_to_find_table_points_at_files_and_names_that_exist():
    # docs/architecture.md answers a newcomer's look-ups with a file and a name in it;
    # a rename or a move that forgets the table fails here instead of misleading them.
    page = (PACKAGE_ROOT.parent / "docs" / "architecture.md").read_text()
    section = page.split("## Where to find", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]
    assert len(rows) >= 5  # the four look-ups of issue 29, the GET in two files
    wrong = []
    for row in rows:
        _, _, files, where, _ = row.split("|")
        paths = [PACKAGE_ROOT.parent / f for f in re.findall(r"`([\w/]+\.py)`", files)]
        text = "".join(p.read_text() for p in paths if p.exists())
        wrong += [str(p) for p in paths if not p.exists()]
        for name in re.findall(r"`([\w.]+)`", where):
            if not name.endswith(".py") and name.rsplit(".", 1)[-1] not in text:
                wrong.append(f"{name} in {files.strip()}")
    assert wrong == []


# The run pipeline's stages, in order; each stage module imports only stages before it,
# and what they share (the context, the array helpers, the codes, the rules) none.
RUN_STAGES = tuple(
    f"toolkit.analysis.{name}" for name in ("transitions", "prices", "charges", "run_table", "runs")
)
RUN_STAGE_PARTS = (
    "toolkit.analysis.observed",
    "toolkit.analysis._arrays",
    "toolkit.analysis.run_codes",
    "toolkit.analysis.run_rules",
)


def _later_stage(source: str, target: str) -> bool:
    """Whether `target` is a stage `source` may not import: a later stage, or any stage
    for the parts the stages share."""
    if target not in RUN_STAGES:
        return False
    if source in RUN_STAGE_PARTS:
        return True
    return source in RUN_STAGES and RUN_STAGES.index(target) > RUN_STAGES.index(source)


def test_the_run_stages_import_only_the_stages_before_them():
    assert set(RUN_STAGES + RUN_STAGE_PARTS) <= set(MODULES)
    assert _later_stage("toolkit.analysis.charges", "toolkit.analysis.run_table")
    assert not _later_stage("toolkit.analysis.run_table", "toolkit.analysis.charges")
    assert [str(e) for e in INTERNAL if _later_stage(e.source, e.target)] == []


# One name, one meaning (docs/architecture.md): a public top-level class or function name
# is defined by one module of the package. The names below are defined by several on
# purpose, each with why; the modules are listed so a further definition fails too.
_SERVICE_OPERATION = "one operation of the service: the client's request and the emulator's route"
_PLOT_OF_FIGURE = "plots.X draws the figure analysis's X computes: one figure, its picture"
SHARED_NAMES: dict[str, tuple[frozenset[str], str]] = {
    **{
        name: (
            frozenset({"toolkit.client.flows", "toolkit.emulator.routes.api"}),
            _SERVICE_OPERATION,
        )
        for name in (
            "add_pages",
            "create_chapter",
            "get_chapter",
            "get_project",
            "list_chapters",
            "list_projects",
            "rescan_chapter",
            "start_chapter",
        )
    },
    **{
        name: (
            frozenset({"toolkit.emulator.core.workspaces", "toolkit.emulator.routes.admin"}),
            "one admin operation: the emulator's core does it, its admin route answers it",
        )
        for name in ("create_project", "create_workspace")
    },
    "burn_down": (frozenset({"toolkit.analysis.forecast", "toolkit.plots"}), _PLOT_OF_FIGURE),
    "credit_spend": (frozenset({"toolkit.analysis.measures", "toolkit.plots"}), _PLOT_OF_FIGURE),
    "cycle_times": (frozenset({"toolkit.analysis.timing", "toolkit.plots"}), _PLOT_OF_FIGURE),
    "throughput": (frozenset({"toolkit.analysis.measures", "toolkit.plots"}), _PLOT_OF_FIGURE),
    "evaluate": (
        frozenset(
            {
                "toolkit.watch.anomaly",
                "toolkit.watch.budget",
                "toolkit.watch.checks",
                "toolkit.watch.stuck",
            }
        ),
        "protocol: each family of watch checks is evaluated by its module's `evaluate`; "
        "checks.evaluate (tk.watch.evaluate) runs them all",
    ),
    "label": (
        frozenset({"toolkit.metrics", "toolkit.reporting.figures"}),
        "one meaning, a figure's label: reporting.figures.label is metrics.label over a "
        "report's Period (it calls metrics.label)",
    ),
}


def _public_definitions() -> dict[str, set[str]]:
    defined: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        for node in ast.parse(path.read_text()).body:
            kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
            if isinstance(node, kinds) and not node.name.startswith("_"):
                defined.setdefault(node.name, set()).add(module)
    return defined


def test_one_public_name_is_defined_by_one_module():
    shared = {n: ms for n, ms in _public_definitions().items() if len(ms) > 1}
    unexplained = [
        f"{name}: {', '.join(sorted(modules))}"
        for name, modules in sorted(shared.items())
        if name not in SHARED_NAMES or SHARED_NAMES[name][0] != modules
    ]
    assert unexplained == []
    # A name no longer shared leaves the list, so it cannot excuse a later collision.
    assert sorted(set(SHARED_NAMES) - set(shared)) == []


def test_the_renamed_names_each_mean_one_thing():
    # The pairs of issue 44: the public side kept its name, the other was renamed.
    defined = _public_definitions()
    for name, home in {
        "Outcome": "toolkit.analysis.run_codes", "Workspace": "toolkit.frames.pull",
        "Finding": "toolkit.watch.findings", "Problem": "toolkit.batch.folder",
        "read_config": "toolkit.watch.config",
    }.items():  # fmt: skip
        assert defined[name] == {home}


# The exported members, between packages: a module another package imports from says what
# it offers in `__all__`, and the other package takes only those names, whether by
# `from toolkit.x.y import name` or as `y.name` after `from toolkit.x import y`. Inside one
# package its modules share their machinery freely.
def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _declared_all(module: str) -> set[str] | None:
    for node in ast.parse(MODULES[module].read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return None


def _taken_across(module: str, source: str | None = None) -> Iterator[tuple[str, str, int]]:
    """(module taken from, name, line) for each name `module` takes from another package."""
    tree = ast.parse(MODULES[module].read_text() if source is None else source)
    aliases: dict[str, str] = {}  # a local name bound to a toolkit module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in MODULES:
            for alias in node.names:
                whole = f"{node.module}.{alias.name}"
                if whole in MODULES:
                    aliases[alias.asname or alias.name] = whole
                elif _package(node.module) != _package(module):
                    yield node.module, alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in MODULES:
                    aliases[alias.asname] = alias.name
                elif alias.name.split(".")[0] == "toolkit":
                    aliases["toolkit"] = "toolkit"  # `import toolkit.x` binds `toolkit`
    for node in ast.walk(tree):
        # `y.name`, and `tk.analysis.runs`: down the chain through modules to the name.
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        target = aliases.get(node.id) if isinstance(node, ast.Name) else None
        for attr in reversed(chain):
            if target is None or f"{target}.{attr}" not in MODULES:
                break
            target = f"{target}.{attr}"
        else:
            continue
        if target and _package(target) != _package(module) and not attr.startswith("__"):
            yield target, attr, getattr(node, "lineno", 0)


def _not_exported() -> list[str]:
    wrong = []
    for module in MODULES:
        for target, name, line in _taken_across(module):
            declared = _declared_all(target)
            if declared is None:
                wrong.append(f"{module}:{line}: {target} has no __all__ (takes {name})")
            elif name not in declared:
                wrong.append(f"{module}:{line}: {target}.{name} is not in its __all__")
    return wrong


def test_another_package_imports_only_what_a_module_exports():
    assert _not_exported() == []


def test_a_name_is_read_through_imports_and_module_chains():
    planted = (
        "import toolkit as tk\n"
        "from toolkit.analysis import work\n"
        "from toolkit.store.ids import new_id\n"
        "a = tk.analysis.work._fit_tail\n"
        "b = work.forecast_runs\n"
    )
    assert sorted(_taken_across("toolkit.cli", planted)) == [
        ("toolkit.analysis.work", "_fit_tail", 4),
        ("toolkit.analysis.work", "forecast_runs", 5),
        ("toolkit.store.ids", "new_id", 3),
    ]


def _is_public_module(module: str) -> bool:
    return not any(part.startswith("_") for part in module.split("."))


def test_every_public_module_says_what_it_exports():
    # Every module not private by its name (`_arrays.py`, `widgets/_table.py`) lists in
    # `__all__` what other modules and users take from it; the rest of it is machinery,
    # spelled `_name`.
    assert all(_is_public_module(m) for m in PUBLIC)
    without = {m for m in MODULES if _is_public_module(m) and _declared_all(m) is None}
    assert sorted(without) == []


def test_every_function_and_class_a_module_exports_has_a_docstring():
    # httpx's rule, per module: a name in `__all__` is a promise, and says what it is.
    undocumented = []
    for module, path in MODULES.items():
        declared = _declared_all(module) or set()
        for node in ast.parse(path.read_text()).body:
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and node.name in declared
                and not (ast.get_docstring(node) or "").strip()
            ):
                undocumented.append(f"{module}.{node.name}")
    assert undocumented == []


# A test reaches a private name (`_name`, or a `_module`) only of the package it tests:
# tests/store/ of toolkit.store, a flat tests/test_x.py of toolkit.x. Machinery another
# package's tests need is public, or it is listed here with why.
PRIVATE_REACHED = {
    # The signing primitive: the webhook tests sign requests the way the emulator does.
    ("tests/webhooks/test_receiver.py", "toolkit._signing"),
    ("tests/webhooks/test_receiver_load.py", "toolkit._signing"),
    ("tests/webhooks/test_verification.py", "toolkit._signing"),
    ("tests/test_secrets.py", "toolkit._signing"),
    ("tests/bench/bench_webhooks.py", "toolkit._signing"),
    ("tests/test_cli_errors.py", "toolkit._signing"),
    # The weekly page's plot, drawn with the plots' colours and checked with them.
    ("tests/test_plots.py", "toolkit.reporting.page"),
    # The dashboard benchmark builds the chapters table without a kernel.
    ("tests/bench/bench_dashboard.py", "toolkit.widgets"),
}


def _tested_package(path: Path) -> str:
    relative = path.relative_to(TESTS_ROOT)
    if len(relative.parts) > 1:
        return "toolkit." + ".".join(relative.parts[:-1])
    return "toolkit." + relative.stem.removeprefix("test_").split("_")[0]


def _private_imports(path: Path, source: str) -> list[str]:
    """`file:line: name` for each private name the test file takes outside its package."""
    here = str(path.relative_to(TESTS_ROOT.parent))
    home = _tested_package(path)
    wrong = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toolkit")):
            continue
        module = node.module or ""
        for alias in node.names:
            whole = f"{module}.{alias.name}"
            private = alias.name.startswith("_") or not _is_public_module(module)
            if (
                private
                and not within(module, home)
                and not within(whole, home)
                and (here, module) not in PRIVATE_REACHED
                and (here, whole) not in PRIVATE_REACHED
            ):
                wrong.append(f"{here}:{node.lineno}: {whole}")
    return wrong


def test_a_test_reaches_private_names_only_of_the_package_it_tests():
    wrong = [
        line
        for path in sorted(TESTS_ROOT.rglob("*.py"))
        for line in _private_imports(path, path.read_text())
    ]
    assert wrong == []


def test_a_test_reaching_another_packages_private_name_is_found():
    # The rule reads what it should: the analysis's machinery planted in the store's
    # tests is found; in the analysis's own tests, and a public name, are not.
    planted = (
        "from toolkit.analysis.work import _fit_tail\nfrom toolkit.store import SnapshotStore\n"
    )
    assert _private_imports(TESTS_ROOT / "store" / "test_x.py", planted) == [
        "tests/store/test_x.py:1: toolkit.analysis.work._fit_tail"
    ]
    assert _private_imports(TESTS_ROOT / "analysis" / "test_x.py", planted) == []
