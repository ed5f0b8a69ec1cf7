"""Belief representations: write -> parse round trips, parser robustness, phrasings."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.rewards.schemas import FROZEN, FROZEN_STATE, SOKOBAN, SOKOBAN_STATE, build_grid
from vagen.prompts.belief import REPRESENTATIONS, Belief, parse_belief, relation, write_belief
from vagen.rewards.world_model import score_belief

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def sokoban_states(draw):
    rows, cols = draw(st.integers(2, 7)), draw(st.integers(2, 7))
    cells = [(r, c) for r in range(rows) for c in range(cols)]
    player = draw(st.sampled_from(cells))
    boxes = draw(st.lists(st.sampled_from([c for c in cells if c != player]), unique=True, max_size=3))
    targets = draw(st.lists(st.sampled_from(cells), unique=True, max_size=3))
    entities = {"player": list(player), "boxes": [list(b) for b in boxes], "targets": [list(t) for t in targets]}
    return {"entities": entities, "grid": build_grid(entities, SOKOBAN, rows, cols), "grid_size": [rows, cols]}


@st.composite
def frozen_states(draw):
    rows, cols = draw(st.integers(2, 6)), draw(st.integers(2, 6))
    cells = [(r, c) for r in range(rows) for c in range(cols)]
    player, goal = draw(st.sampled_from(cells)), draw(st.sampled_from(cells))
    holes = draw(st.lists(st.sampled_from([c for c in cells if c not in (player, goal)]), unique=True, max_size=4))
    entities = {"player": list(player), "goal": list(goal), "holes": [list(h) for h in holes]}
    return {"entities": entities, "grid": build_grid(entities, FROZEN, rows, cols), "grid_size": [rows, cols]}


@pytest.mark.parametrize("representation", REPRESENTATIONS)
@FAST
@given(state=sokoban_states())
def test_round_trip_sokoban(representation, state):
    text = write_belief(state, SOKOBAN, representation)
    belief = parse_belief(text, SOKOBAN, representation)
    assert belief.parsed, (text, belief)
    assert score_belief(belief, state, SOKOBAN)["f1"] == 1.0, (text, belief)


@pytest.mark.parametrize("representation", REPRESENTATIONS)
@FAST
@given(state=frozen_states())
def test_round_trip_frozenlake(representation, state):
    text = write_belief(state, FROZEN, representation)
    belief = parse_belief(text, FROZEN, representation)
    assert score_belief(belief, state, FROZEN)["f1"] == 1.0, (text, belief)


@pytest.mark.parametrize("schema", [SOKOBAN, FROZEN], ids=["sokoban", "frozen"])
@pytest.mark.parametrize("representation", REPRESENTATIONS)
@settings(max_examples=150, deadline=None)
@given(text=st.text())
def test_parser_never_raises(schema, representation, text):
    belief = parse_belief(text, schema, representation)
    assert isinstance(belief, Belief)
    # The catch-all guard must not be what keeps it alive: that would hide a parser bug.
    assert not any(e.startswith("internal parser error") for e in belief.errors), belief.errors
    assert all(len(p) == 2 for pts in belief.entities.values() for p in pts)


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("{}[]()\"',:0123456789 \n#_PXO*Sboxplayerrowcolumnbelowleft.")),
                    max_size=200))
def test_parser_never_raises_on_near_miss_syntax(text):
    for representation in REPRESENTATIONS:
        belief = parse_belief(text, SOKOBAN, representation)
        assert not any(e.startswith("internal parser error") for e in belief.errors), belief.errors


def test_parser_survives_non_strings_and_unknown_representation():
    assert not parse_belief(None, SOKOBAN, "natural").parsed
    assert not parse_belief(b"bytes", SOKOBAN, "structured").parsed
    belief = parse_belief("The player is at (1, 1).", SOKOBAN, "poetry")
    assert not belief.parsed and belief.errors


@pytest.mark.timeout(120)  # catastrophic backtracking would run for hours; linear takes well under a second
def test_parser_is_fast_on_adversarial_text():
    nasty = "row 2" + " " * 20_000 + "x" + "{" * 5_000 + "left " * 3_000 + "\n" * 1000
    for representation in REPRESENTATIONS:
        parse_belief(nasty, SOKOBAN, representation)


# ------------------------------------------------------------------------- writing


def test_write_structured_is_compact_json_in_schema_order():
    assert write_belief(SOKOBAN_STATE, SOKOBAN, "structured") == (
        '{"player": [2, 3], "boxes": [[3, 3], [1, 1]], "targets": [[4, 4], [1, 1]]}')


def test_write_symbolic_is_the_grid():
    assert write_belief(SOKOBAN_STATE, SOKOBAN, "symbolic").splitlines() == SOKOBAN_STATE["grid"]


def test_write_symbolic_renders_without_a_grid():
    state = {"entities": {"player": [0, 1], "boxes": [[1, 1]], "targets": [[1, 1]]}, "grid_size": [2, 3]}
    assert write_belief(state, SOKOBAN, "symbolic") == "#P#\n#*#"  # first background symbol: '#'


def test_write_natural():
    text = write_belief(SOKOBAN_STATE, SOKOBAN, "natural")
    assert text.startswith(
        "The player is at row 2, column 3. There is a box at row 3, column 3, below the player. "
        "There is a box at row 1, column 1, above-left of the player. ")
    assert "There is a target at row 4, column 4, below-right of the player." in text
    empty = {"entities": {"player": [1, 1], "boxes": [], "targets": [[1, 2]]}}
    text = write_belief(empty, SOKOBAN, "natural")
    assert "There are no boxes." in text
    assert "There is a target at row 1, column 2, to the right of the player." in text


def test_write_rejects_unknown_representation():
    with pytest.raises(ValueError, match="unknown belief representation"):
        write_belief(SOKOBAN_STATE, SOKOBAN, "poetry")


# ------------------------------------------------------------------------- relations


@pytest.mark.parametrize("point,expected", [
    ((1, 3), "above"), ((3, 3), "below"), ((2, 1), "left"), ((2, 5), "right"),
    ((0, 0), "above-left"), ((1, 4), "above-right"), ((4, 0), "below-left"), ((3, 4), "below-right"),
    ((2, 3), "same"),
])
def test_relation(point, expected):
    assert relation(point, (2, 3)) == expected


# ------------------------------------------------------------------------- parsing


@pytest.mark.parametrize("text,points,relation_only", [
    ("The player is at row 2, column 3.", {"player": [(2, 3)]}, {}),
    ("Player: (2, 3). Boxes: [3,3] and [1, 1].", {"player": [(2, 3)], "boxes": [(3, 3), (1, 1)]}, {}),
    ("The agent is at 2,3 and a box is at column 3, row 1.", {"player": [(2, 3)], "boxes": [(1, 3)]}, {}),
    ("You are at (row 2, col 3).", {"player": [(2, 3)]}, {}),
    ("There are no boxes.", {"boxes": []}, {}),
    ("A box is below-left of the player.", {}, {"boxes": ["below-left"]}),
    ("A box is up and to the left of you.", {}, {"boxes": ["above-left"]}),
    ("The target is in the upper right of the player.", {}, {"targets": ["above-right"]}),
    ("One box sits lower left from the agent.", {}, {"boxes": ["below-left"]}),
    ("A box is to the left of and above the player.", {}, {"boxes": ["above-left"]}),
    ("Two boxes are right of the player.", {}, {"boxes": ["right", "right"]}),
    ("The box is right below the player.", {}, {"boxes": ["below"]}),
    ("A target is at the same position as the player.", {}, {"targets": ["same"]}),
    ("Below the player there is a box.", {}, {"boxes": ["below"]}),
    ("The player is above a box.", {}, {"boxes": ["below"]}),
    ("The player at (2,3) is above the box at (3,3).", {"player": [(2, 3)], "boxes": [(3, 3)]}, {}),
    ("There is a box below the player. It is at (3, 3).", {"boxes": [(3, 3)]}, {}),
    ("The player will move from (2, 3) to (2, 4).", {"player": [(2, 4)]}, {}),
    ("The box is left of the target.", {}, {}),
])
def test_natural_phrasings(text, points, relation_only):
    belief = parse_belief(text, SOKOBAN, "natural")
    assert belief.parsed
    for name, expected in points.items():
        assert belief.entities[name] == expected, belief
    assert belief.relation_only == relation_only, belief


def test_natural_keeps_relations_of_located_objects():
    belief = parse_belief("There is a box at row 3, column 3, below the player.", SOKOBAN, "natural")
    assert belief.entities["boxes"] == [(3, 3)]
    assert belief.relations == {"boxes": ["below"]} and belief.relation_only == {}


def test_natural_frozenlake_uses_the_schema_aliases():
    text = "The elf is at (0, 0). The gift is at row 3, column 3. Holes at (1,1) and (2,3)."
    belief = parse_belief(text, FROZEN, "natural")
    assert score_belief(belief, FROZEN_STATE, FROZEN)["f1"] == 1.0


def test_natural_nothing_mentioned():
    belief = parse_belief("I will push it to the right.", SOKOBAN, "natural")
    assert not belief.parsed and belief.errors


@pytest.mark.parametrize("text", [
    'Here is the state: {"player": [2, 3], "boxes": [[3, 3], [1, 1]], "targets": [[4, 4], [1, 1]]} done',
    "```json\n{'Player': (2, 3), 'box': [(3, 3), (1, 1)], 'goals': [[4,4],[1,1],],}\n```",
    '{"entities": {"player": {"row": 2, "col": 3}, "boxes": [{"row": 3, "column": 3}, [1, 1]],'
    ' "targets": "(4, 4), (1, 1)"}}',
    '{player: [2, 3], boxes: [[3, 3], [1, 1]], targets: [[4, 4], [1, 1]]}',
    '{"player_position": [2, 3], "box locations": [[3, 3], [1, 1]], "Target-Positions": [[4, 4], [1, 1]]}',
])
def test_structured_is_tolerant(text):
    belief = parse_belief(text, SOKOBAN, "structured")
    assert belief.parsed, belief
    assert score_belief(belief, SOKOBAN_STATE, SOKOBAN)["f1"] == 1.0, belief


def test_structured_reports_unknown_keys_and_bad_values():
    belief = parse_belief('{"player": [2, 3], "dragon": [0, 0], "boxes": "nowhere"}', SOKOBAN, "structured")
    assert belief.entities == {"player": [(2, 3)], "boxes": []}
    assert any("dragon" in e for e in belief.errors)
    assert not parse_belief("player at 2,3", SOKOBAN, "structured").parsed


def test_symbolic_finds_the_grid_in_prose():
    text = "The map now:\n```\n# # # # # #\n#*___#\n#__P_#\n#__X_#\n#___O#\n######\n```\nP moves next."
    belief = parse_belief(text, SOKOBAN, "symbolic")
    assert belief.entities == {"player": [(2, 3)], "boxes": [(1, 1), (3, 3)], "targets": [(1, 1), (4, 4)]}
    assert not parse_belief("no map here", SOKOBAN, "symbolic").parsed


def test_three_d_entities_round_trip_in_structured_form():
    import json

    from envs.base import EntitySpec, StateSchema
    from vagen.rewards.world_model import score_belief

    schema = StateSchema(entities=(
        EntitySpec("red_cube", "point", "r", ("red cube",), "a cube", dims=3),
        EntitySpec("goals", "points", "g", ("goal", "goals"), "goal spots", dynamic=False, dims=3),
    ), reference="red_cube")
    state = {"entities": {"red_cube": [10.4, -20, 20], "goals": [[100, 0, 0], [0, 100, 0]]}}
    text = write_belief(state, schema, "structured")
    assert json.loads(text) == {"red_cube": [10, -20, 20], "goals": [[100, 0, 0], [0, 100, 0]]}
    belief = parse_belief(text, schema, "structured")
    assert belief.entities == {"red_cube": [(10, -20, 20)], "goals": [(100, 0, 0), (0, 100, 0)]}
    assert score_belief(belief, state, schema)["f1"] == 1.0
    # {"x", "y", "z"} objects and a 2-D point for a 3-D entity (unreadable: costs precision, not a crash)
    b2 = parse_belief('{"red cube position": {"x": 12, "y": -18, "z": 21}, "goals": [[1, 2]]}', schema, "structured")
    assert b2.entities["red_cube"] == [(12, -18, 21)] and b2.entities["goals"] == []
    assert score_belief(b2, state, schema, tol=5)["per_entity"]["red_cube"]["tp"] == 1
    assert score_belief(b2, state, schema, tol=1)["per_entity"]["red_cube"]["tp"] == 0
    assert "[10, -20, 20]" in write_belief(state, schema, "natural")
    with pytest.raises(ValueError, match="3-D"):
        write_belief(state, schema, "symbolic")
