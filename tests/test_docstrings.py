"""Docstrings in one style, Google's (`Args:`, `Returns:`, `Raises:`), which the API
reference (mkdocstrings) renders; the public calls done so far document every parameter.
Read statically with griffe, which the `docs` extra installs (the README's test command
installs it; without it this file fails to import rather than skip)."""

from __future__ import annotations

import re
from pathlib import Path

import griffe
import pytest

ROOT = Path(__file__).resolve().parents[1]
OTHER_STYLES = re.compile(r":param \w|:returns?:|^\s*(Parameters|Returns)\n\s*-{3,}", re.M)
# The public calls whose parameters are documented, package by package; a package joins
# when its docstrings are done.
DOCUMENTED = [
    "toolkit.client.Client",
    "toolkit.client.RetryPolicy",
    "toolkit.client.check_image",
    "toolkit.client.check_text",
    "toolkit.client.prepare_pages",
    "toolkit.webhooks.verify",
    "toolkit.webhooks.Receiver",
    "toolkit.widgets.Dashboard",
    "toolkit.widgets.UploadPanel",
    "toolkit.widgets.RescanPanel",
    "toolkit.analysis.compare_models",
    "toolkit.analysis.credit_spend",
    "toolkit.analysis.cycle_times",
    "toolkit.analysis.failure_rates",
    "toolkit.analysis.failures",
    "toolkit.analysis.forecast.forecast",
    "toolkit.analysis.forecast_accuracy",
    "toolkit.analysis.finished",
    "toolkit.analysis.lead_times",
    "toolkit.analysis.monthly_spend",
    "toolkit.analysis.price_by_language",
    "toolkit.analysis.price_estimate",
    "toolkit.analysis.price_per_chapter",
    "toolkit.analysis.price_per_page",
    "toolkit.analysis.review_backlog",
    "toolkit.analysis.runs.runs",
    "toolkit.analysis.stalled",
    "toolkit.analysis.stuck",
    "toolkit.analysis.throughput",
    "toolkit.store.SnapshotInfo",
    "toolkit.store.SnapshotStore",
    "toolkit.store.check_report",
    "toolkit.store.check_store",
    "toolkit.store.migrate_store",
    "toolkit.store.utc",
    "toolkit.frames.Workspace",
    "toolkit.frames.chapter_rows",
    "toolkit.frames.chapter_states",
    "toolkit.frames.chapters_frame",
    "toolkit.frames.export_rows",
    "toolkit.frames.exports_frame",
    "toolkit.frames.language_rows",
    "toolkit.frames.languages_frame",
    "toolkit.frames.project_rows",
    "toolkit.frames.projects_frame",
    "toolkit.frames.pull.pull",
    "toolkit.frames.says_stalled",
    "toolkit.plots.project_colors",
    "toolkit.models.AddedPages",
    "toolkit.models.Chapter",
    "toolkit.models.ChapterDetail",
    "toolkit.models.ChapterListItem",
    "toolkit.models.LanguageDetail",
    "toolkit.models.LanguageProgress",
    "toolkit.models.NewChapter",
    "toolkit.models.Page",
    "toolkit.models.PreparedExport",
    "toolkit.models.Project",
    "toolkit.models.RescanResult",
    "toolkit.models.Resource",
    "toolkit.models.StartResult",
    "toolkit.models.TargetLanguage",
    "toolkit.models.UnexpectedValue",
    "toolkit.models.camel",
    "toolkit.errors.ApiError",
    "toolkit.errors.IncompletePull",
    "toolkit.errors.InvalidUpload",
    "toolkit.errors.RateLimited",
    "toolkit.errors.TransportError",
    "toolkit.errors.UnconfirmedCreate",
    "toolkit.errors.UnexpectedAnswer",
    "toolkit.errors.WaitTimeout",
    "toolkit.errors.error_class_for",
    "toolkit.errors.in_plain_words",
    "toolkit.emulator.AdminCallError",
    "toolkit.emulator.Emulator",
    "toolkit.emulator.run_server",
]


@pytest.fixture(scope="module")
def package():
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)])
    package = loader.load("toolkit")
    loader.resolve_aliases(implicit=False, external=False)
    return package


def _objects(obj):
    yield obj
    for member in obj.members.values():
        if not member.is_alias and (member.is_module or member.is_class or member.is_function):
            yield from _objects(member)


def test_no_docstring_uses_another_style(package):
    other = [
        o.path for o in _objects(package) if o.docstring and OTHER_STYLES.search(o.docstring.value)
    ]
    assert other == []


def _undocumented(function, docstrings, kinds=("parameters",)) -> list[str]:
    named = {p.name for p in function.parameters} - {"self", "cls", "args", "kwargs"}
    sections = [s for d in docstrings if d for s in d.parse(griffe.Parser.google)]
    listed = {p.name for s in sections if s.kind.value in kinds for p in s.value}
    return sorted(named - listed)


@pytest.mark.parametrize("path", DOCUMENTED)
def test_every_parameter_of_a_documented_call_is_in_its_args_section(package, path):
    target = package[path.removeprefix("toolkit.")]
    target = target.final_target if target.is_alias else target
    missing = {}
    if target.is_class:
        # A record (a dataclass the toolkit fills, such as a resource) may list its
        # fields under `Attributes:`, what a reader of it looks for, instead of `Args:`;
        # what a base class documents (the page links it) is not repeated.
        kinds = ("parameters", "attributes")
        docstrings = [c.docstring for c in [target, *target.mro()]]
        init = target.all_members.get("__init__")  # none of its own: a base's, or Python's
        missing[path] = _undocumented(init, docstrings, kinds) if init else []
        for name, member in target.members.items():
            if member.is_function and not name.startswith("_"):
                missing[f"{path}.{name}"] = _undocumented(member, [member.docstring])
    else:
        missing[path] = _undocumented(target, [target.docstring])
    assert {where: names for where, names in missing.items() if names} == {}


# The `store` and `tz` arguments of the analysis are written once, in the package's
# docstring, and given word for word in each call's `Args:` (then what the call adds), so
# `help(tk.analysis.runs)` shows them whole and no copy can drift (issue 44 item 4).
SHARED_ARGS = ("store", "tz")


def _words(text: str) -> str:
    return " ".join(text.split())


def _shared_texts(package) -> dict[str, str]:
    """Each shared argument's text, as the package's docstring lists it."""
    doc = package["analysis"].docstring.value
    texts = {}
    for name in SHARED_ARGS:
        found = re.search(rf"^- `{name}`: (.*?)(?=^- `|^$)", doc, flags=re.M | re.S)
        assert found, f"toolkit.analysis's docstring has no `{name}` entry"
        texts[name] = _words(found.group(1)).removesuffix(".")
    return texts


def _analysis_parameters(package):
    """(call, parameter, its description) for every documented public analysis call."""
    for module in package["analysis"].modules.values():
        if module.name.startswith("_"):
            continue
        for name, member in module.members.items():
            if member.is_alias or not member.is_function or name.startswith("_"):
                continue
            if not member.docstring:
                continue
            for section in member.docstring.parse(griffe.Parser.google):
                if section.kind.value == "parameters":
                    for param in section.value:
                        yield f"{module.path}.{name}", param.name, param.description


def test_the_shared_arguments_are_given_word_for_word(package):
    texts = _shared_texts(package)
    differ, given = [], 0
    for call, name, description in _analysis_parameters(package):
        if name in texts:
            given += 1
            if not _words(description).startswith(texts[name]):
                differ.append(f"{call}: {name}")
    assert differ == []
    assert given >= 30  # the calls that take them (store 18, tz 16 when written)


def test_a_drifted_copy_is_found(package):
    texts = _shared_texts(package)
    drifted = texts["tz"].replace("UTC", "the machine's zone")
    assert not _words(drifted + "; also the periods").startswith(texts["tz"])
    assert _words(texts["tz"] + ";\n    also the zone of the periods.").startswith(texts["tz"])
