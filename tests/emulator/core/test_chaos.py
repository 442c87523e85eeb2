"""Chaos rules: what a rule matches, how its count and probability are drawn (seeded),
and the refusals of a rule that cannot work."""

from __future__ import annotations

import pytest
from emulator_helpers import plain_client

from toolkit.emulator import AdminCallError, Emulator
from toolkit.emulator.core.chaos import Chaos, Target, route_of


def test_paths_map_to_the_routes_the_spec_writes():
    assert route_of("/projects") == ("/projects", None)
    assert route_of("/projects/p1/chapters") == ("/projects/{}/chapters", "p1")
    assert route_of("/chapters/c1/rescan") == ("/chapters/{}/rescan", "c1")
    assert route_of("/chapters") is None
    assert route_of("/nowhere/x") is None


def test_a_rule_names_its_route_with_any_placeholder_and_with_or_without_the_prefix():
    chaos = Chaos()
    for route in ("/chapters/{id}", "/api/v1/chapters/{chapter_id}", "/chapters/{}/"):
        assert chaos.add({"route": route, "kind": "reset"}).route == "/chapters/{}"


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"route": "/chapters", "kind": "reset"}, "route"),
        ({"route": "*", "kind": "explode"}, "kind"),
        ({"route": "*", "kind": "status"}, "status"),
        ({"route": "*", "kind": "status", "status": 200}, "status"),
        ({"route": "*", "kind": "latency"}, "latencyMs"),
        ({"route": "*", "kind": "reset", "probability": 2}, "probability"),
        ({"route": "*", "kind": "reset", "count": 0}, "count"),
        ({"route": "*", "kind": "reset", "method": "PUT"}, "method"),
        ({"route": "*", "kind": "reset", "colour": "red"}, "colour"),
    ],
)
def test_a_rule_that_cannot_work_is_refused_naming_the_field(body, named):
    with pytest.raises(Exception, match=named) as caught:
        Chaos().add(body)
    assert caught.value.status == 400


def test_the_first_rule_that_fires_wins_and_a_spent_count_stays_listed():
    chaos = Chaos()
    chaos.add({"method": "GET", "route": "/projects", "kind": "reset", "count": 1})
    chaos.add({"method": "*", "route": "*", "kind": "latency", "latencyMs": 1})
    target = Target("GET", "/projects", None, None)
    assert [chaos.draw(target).kind for _ in range(3)] == ["reset", "latency", "latency"]
    assert [(r["kind"], r["count"], r["applied"]) for r in chaos.rules()] == [
        ("reset", 0, 1),
        ("latency", None, 2),
    ]


def test_a_rule_draws_the_same_requests_under_the_same_seed():
    def pattern(seed: int) -> list[bool]:
        chaos = Chaos()
        chaos.add({"route": "*", "kind": "reset", "probability": 0.5, "seed": seed})
        return [chaos.draw(Target("GET", "/projects", None, None)) is not None for _ in range(40)]

    assert pattern(3) == pattern(3)
    assert pattern(3) != pattern(4)
    assert 5 < sum(pattern(3)) < 35


def test_a_rule_only_draws_for_the_requests_it_matches():
    # Requests to other routes in between do not move a rule's draws.
    def pattern(noise: int) -> list[bool]:
        chaos = Chaos()
        chaos.add({"route": "/projects", "kind": "reset", "probability": 0.5, "seed": 1})
        seen = []
        for _ in range(20):
            for _ in range(noise):
                chaos.draw(Target("GET", "/chapters/{}", None, "c"))
            seen.append(chaos.draw(Target("GET", "/projects", None, None)) is not None)
        return seen

    assert pattern(0) == pattern(3)


def test_probabilistic_503s_hit_the_same_requests_in_a_fresh_emulator(epoch):
    def statuses() -> list[int]:
        with Emulator(start=epoch) as emu:
            key = emu.create_workspace("W", credits=0)["apiKey"]
            emu.add_chaos("GET", "/projects", "status", status=503, probability=0.3, seed=9)
            with plain_client(f"{emu.url}/api/v1", key) as api:
                return [api.get("/projects").status_code for _ in range(20)]

    first = statuses()
    assert first == statuses()
    assert set(first) == {200, 503}


def test_rules_are_listed_removed_and_cleared_through_the_admin_api(emulator):
    first = emulator.add_chaos("GET", "/projects", "reset")
    emulator.add_chaos("POST", "/chapters/{id}/start", "status", status=409)
    assert [r["id"] for r in emulator.chaos_rules()] == [first["id"], "rule_2"]
    emulator.clear_chaos(first["id"])
    assert [r["route"] for r in emulator.chaos_rules()] == ["/chapters/{}/start"]
    with pytest.raises(AdminCallError) as caught:
        emulator.clear_chaos(first["id"])
    assert caught.value.status == 404
    emulator.clear_chaos()
    assert emulator.chaos_rules() == []
