"""What the service's dashboard sets up and the API only reads: workspaces and projects.

Admin bodies are checked here; a bad field is a 400 naming the field and what it
takes. API keys are `cts_` and 32 URL-safe random characters (their format is not
shown by the spec).
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from toolkit.emulator.core.limits import MAX_CREDITS
from toolkit.emulator.core.state import Row, State, new_uuid
from toolkit.emulator.routes.errors import EmulatorError

__all__ = ["create_project", "create_workspace", "credits_field", "set_credits", "text_field"]

_KINDS = ("comic", "novel")
_DIRECTIONS = ("ltr", "rtl", "vertical")
_STEPS = ("text", "translate", "clean", "full")
_LANGUAGE = re.compile(r"^[a-z]{2}$")


def _new_api_key() -> str:
    return "cts_" + secrets.token_urlsafe(24)


def create_workspace(state: State, *, name: str, credits: int, at: int) -> Row:
    """A new workspace with its credits and a new API key, created at `at` (ms)."""
    workspace = {
        "id": new_uuid(),
        "name": name,
        "credits": credits,
        "api_key": _new_api_key(),
        "created_ms": at,
    }
    state.db.execute(
        "INSERT INTO workspaces (id, name, credits, api_key, created_ms) "
        "VALUES (:id, :name, :credits, :api_key, :created_ms)",
        workspace,
    )
    return workspace


def set_credits(state: State, workspace_id: str, credits: int) -> Row:
    """Set a workspace's credits; a 404 when there is no such workspace."""
    if not state.db.execute(
        "UPDATE workspaces SET credits = ? WHERE id = ?", (credits, workspace_id)
    ):
        raise EmulatorError(404, f"workspace {workspace_id!r} not found")
    workspace = state.workspace(workspace_id)
    assert workspace is not None
    return workspace


def create_project(state: State, body: Any, *, at: int) -> Row:
    """A project from the admin body; returns the new project's row with its counts."""
    fields = _project_fields(body)
    if state.workspace(fields["workspace_id"]) is None:
        raise EmulatorError(404, f"workspace {fields['workspace_id']!r} not found")
    project_id = new_uuid()
    with state.db.transaction():
        state.db.execute(
            "INSERT INTO projects (id, workspace_id, name, kind, source_language, "
            "reading_direction, process_steps, translation_model, translation_group_id, "
            "created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                project_id,
                fields["workspace_id"],
                fields["name"],
                fields["kind"],
                fields["source_language"],
                fields["reading_direction"],
                fields["process_steps"],
                fields["translation_model"],
                fields["translation_group_id"] or new_uuid(),
                at,
            ),
        )
        state.db.executemany(
            "INSERT INTO project_languages (project_id, language_code, ord, added_ms) "
            "VALUES (?, ?, ?, ?)",
            [(project_id, code, i, at) for i, code in enumerate(fields["target_languages"])],
        )
    return state.project_summary(project_id)


def _project_fields(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise EmulatorError(400, "the body must be a JSON object describing the project")
    kind = _choice(body, "kind", _KINDS)
    steps = _choice(body, "processSteps", _STEPS)
    if kind == "novel" and steps != "translate":
        raise EmulatorError(400, "a novel project takes processSteps 'translate'")
    targets = body.get("targetLanguages")
    if (
        not isinstance(targets, list)
        or not targets
        or not all(isinstance(code, str) and _LANGUAGE.match(code) for code in targets)
        or len(set(targets)) != len(targets)
    ):
        raise EmulatorError(
            400, "targetLanguages must be a non-empty list of distinct two-letter codes"
        )
    model = body.get("translationModel")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise EmulatorError(400, "translationModel must be a model name or null")
    return {
        "workspace_id": text_field(body, "workspaceId"),
        "name": text_field(body, "name"),
        "kind": kind,
        "source_language": _language(body, "sourceLanguage"),
        "reading_direction": _choice(body, "readingDirection", _DIRECTIONS),
        "process_steps": steps,
        "target_languages": targets,
        "translation_model": model,
        "translation_group_id": _group(body),
    }


def _group(body: dict[str, Any]) -> str | None:
    """`translationGroupId`: the group to put the project in (several projects may share
    one, as a series' volumes do); None for a group of its own."""
    group = body.get("translationGroupId")
    if group is not None and (not isinstance(group, str) or not group.strip()):
        raise EmulatorError(400, "translationGroupId must be a non-empty string or null")
    return group


def text_field(body: dict[str, Any], name: str) -> str:
    """A body's non-empty text field; a 400 otherwise."""
    value = body.get(name)
    if not isinstance(value, str) or not value.strip():
        raise EmulatorError(400, f"{name} must be a non-empty string")
    return value


def credits_field(body: Any) -> int:
    """A body's `credits`: a whole number from 0 to `MAX_CREDITS`; a 400 otherwise."""
    value = body.get("credits") if isinstance(body, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_CREDITS:
        raise EmulatorError(
            400, f"credits must be a whole number from 0 to {MAX_CREDITS:,}, not {value!r}"
        )
    return value


def _choice(body: dict[str, Any], name: str, allowed: tuple[str, ...]) -> str:
    value = body.get(name)
    if value not in allowed:
        raise EmulatorError(400, f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return str(value)


def _language(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not _LANGUAGE.match(value):
        raise EmulatorError(400, f"{name} must be a two-letter language code, not {value!r}")
    return value
