"""Golden tests for belief scoring and the world-modeling reward (numbers computed by hand)."""

from __future__ import annotations

import pytest

from tests.rewards.schemas import FROZEN, FROZEN_STATE, SOKOBAN, SOKOBAN_STATE
from vagen.policy.base import PolicyUnavailableError
from vagen.policy.scripted import ScriptedPolicy
from vagen.prompts.belief import Belief, parse_belief, write_belief
from vagen.rewards import LLMJudge, WorldModelItem, WorldModelReward, WorldModelRewardConfig, score_belief


def belief(**entities) -> Belief:
    return Belief(entities={k: [tuple(p) for p in v] for k, v in entities.items()}, parsed=True)


# ------------------------------------------------------------------------- score_belief


def test_micro_f1_across_entities():
    # gold: player (2,3); boxes (3,3),(1,1); targets (4,4),(1,1)
    b = belief(player=[(2, 3)], boxes=[(1, 1), (3, 4), (5, 5)], targets=[(4, 4)])
    s = score_belief(b, SOKOBAN_STATE, SOKOBAN)
    # tp = 1 + 1 + 1 = 3; n_pred = 1 + 3 + 1 = 5; n_gold = 1 + 2 + 2 = 5 -> P = R = F1 = 0.6
    assert (s["tp"], s["n_pred"], s["n_gold"]) == (3, 5, 5)
    assert s["precision"] == pytest.approx(0.6) and s["recall"] == pytest.approx(0.6)
    assert s["f1"] == pytest.approx(0.6)  # micro; the macro mean would be (1 + 0.4 + 2/3) / 3
    assert s["per_entity"]["boxes"]["f1"] == pytest.approx(0.4)
    assert s["per_entity"]["targets"]["recall"] == pytest.approx(0.5)


def test_tolerance_passes_through():
    b = belief(player=[(2, 3)], boxes=[(1, 1), (3, 4), (5, 5)], targets=[(4, 4)])
    # tol=1: (3,4) now hits (3,3): tp = 4, n_pred = 5, n_gold = 5
    assert score_belief(b, SOKOBAN_STATE, SOKOBAN, tol=1.0)["f1"] == pytest.approx(0.8)


def test_unmentioned_entities_cost_recall_and_hallucinations_cost_precision():
    s = score_belief(belief(player=[(2, 3)]), SOKOBAN_STATE, SOKOBAN)
    assert (s["precision"], s["recall"]) == (1.0, pytest.approx(1 / 5))
    # A box on an empty board, and an entity the schema does not know.
    state = {"entities": {"player": [0, 0], "boxes": [], "targets": []}}
    s = score_belief(belief(player=[(0, 0)], boxes=[(1, 1)], dragons=[(2, 2)]), state, SOKOBAN)
    assert (s["tp"], s["n_pred"], s["n_gold"]) == (1, 3, 1)
    assert s["precision"] == pytest.approx(1 / 3) and s["recall"] == 1.0


def test_relation_only_objects_match_by_relation():
    text = "The player is at row 2, column 3. A box is below the player. A box is to the right of the player."
    s = score_belief(parse_belief(text, SOKOBAN, "natural"), SOKOBAN_STATE, SOKOBAN)
    # player: 1/1/1. boxes: gold relations {below, above-left}; "below" hits, "right" misses.
    # targets: not mentioned (0 pred, 2 gold). tp = 2, n_pred = 3, n_gold = 5.
    assert (s["tp"], s["n_pred"], s["n_gold"]) == (2, 3, 5)
    assert s["f1"] == pytest.approx(2 * (2 / 3) * (2 / 5) / (2 / 3 + 2 / 5))  # = 0.5
    assert s["per_entity"]["boxes"]["relation_tp"] == 1
    # Without relation credit those two boxes are neither credited nor penalised.
    s = score_belief(parse_belief(text, SOKOBAN, "natural"), SOKOBAN_STATE, SOKOBAN, use_relations=False)
    assert (s["tp"], s["n_pred"], s["n_gold"]) == (1, 1, 5)


def test_relations_only_match_objects_no_coordinate_claimed():
    # The located box claims (3,3) (relation "below"), so a relation-only "below" has only
    # (1,1) ("above-left") left to match, and misses.
    b = Belief(entities={"boxes": [(3, 3)]}, relation_only={"boxes": ["below"]}, parsed=True)
    per = score_belief(b, SOKOBAN_STATE, SOKOBAN)["per_entity"]["boxes"]
    assert (per["tp"], per["n_pred"], per["n_gold"], per["relation_tp"]) == (1, 2, 2, 0)
    b = Belief(entities={"boxes": [(3, 3)]}, relation_only={"boxes": ["above-left"]}, parsed=True)
    assert score_belief(b, SOKOBAN_STATE, SOKOBAN)["per_entity"]["boxes"]["f1"] == 1.0


def test_unparsed_belief_scores_zero_even_on_an_empty_world():
    empty = {"entities": {"player": None, "boxes": [], "targets": []}}
    assert score_belief(Belief(), empty, SOKOBAN)["f1"] == 0.0
    assert score_belief(belief(), empty, SOKOBAN)["f1"] == 1.0


def test_entity_restriction():
    b = belief(player=[(2, 3)], boxes=[(3, 3), (1, 1)])  # targets not mentioned
    assert score_belief(b, SOKOBAN_STATE, SOKOBAN)["recall"] == pytest.approx(3 / 5)
    assert score_belief(b, SOKOBAN_STATE, SOKOBAN, entities=["player", "boxes"])["f1"] == 1.0


# ------------------------------------------------------------------------- WorldModelReward

FROZEN_AFTER = {"entities": {"player": [0, 1], "goal": [3, 3], "holes": []}, "grid_size": [4, 4]}


def test_weights_and_format_gate():
    reward = WorldModelReward(WorldModelRewardConfig(representation="structured"))
    obs = write_belief(FROZEN_STATE, FROZEN, "structured")  # exact: F1 1.0
    pred = '{"player": [0, 1], "goal": [0, 3], "holes": []}'  # player right, goal wrong: tp 1/2/2 -> 0.5
    out = reward.score(obs, pred, FROZEN_STATE, FROZEN_AFTER, FROZEN, format_valid=True)
    assert out["wm/observation"] == 1.0 and out["wm/prediction"] == pytest.approx(0.5)
    assert out["wm/reward"] == pytest.approx(0.75)  # 0.5 * 1.0 + 0.5 * 0.5
    assert out["wm/frequency_penalty"] == 0.0 and out["wm/observation_parsed"] == 1.0
    out = reward.score(obs, pred, FROZEN_STATE, FROZEN_AFTER, FROZEN, format_valid=False)
    assert out["wm/reward"] == 0.0 and out["wm/observation"] == 0.0

    weighted = WorldModelReward(WorldModelRewardConfig(observation_weight=0.2, prediction_weight=0.8))
    assert weighted.score(obs, pred, FROZEN_STATE, FROZEN_AFTER, FROZEN)["wm/reward"] == pytest.approx(0.6)


def test_missing_texts():
    reward = WorldModelReward()
    obs = write_belief(FROZEN_STATE, FROZEN, "structured")
    out = reward.score(obs, None, FROZEN_STATE, FROZEN_AFTER, FROZEN)
    assert out["wm/observation"] == 1.0 and out["wm/prediction"] == 0.0 and out["wm/reward"] == 0.0
    assert reward.score("   ", obs, FROZEN_STATE, FROZEN_AFTER, FROZEN)["wm/reward"] == 0.0
    # A format without <prediction> gives it weight 0: the observation alone is the reward.
    obs_only = WorldModelReward(WorldModelRewardConfig(observation_weight=1.0, prediction_weight=0.0))
    assert obs_only.score(obs, None, FROZEN_STATE, None, FROZEN)["wm/reward"] == 1.0


def test_min_score_gate():
    reward = WorldModelReward(WorldModelRewardConfig(min_score_for_reward=0.6))
    obs = write_belief(FROZEN_STATE, FROZEN, "structured")
    pred = '{"player": [0, 1], "goal": [0, 3], "holes": []}'
    out = reward.score(obs, pred, FROZEN_STATE, FROZEN_AFTER, FROZEN)
    assert out["wm/prediction"] == pytest.approx(0.5) and out["wm/reward"] == pytest.approx(0.5)


def test_prediction_on_dynamic_entities_only():
    reward = WorldModelReward(WorldModelRewardConfig(prediction_entities="dynamic"))
    obs = write_belief(FROZEN_STATE, FROZEN, "structured")
    out = reward.score(obs, '{"player": [0, 1]}', FROZEN_STATE, FROZEN_AFTER, FROZEN)
    assert out["wm/prediction"] == 1.0  # goal and holes are static: not asked of a prediction


def test_natural_and_symbolic_matchers():
    for representation in ("natural", "symbolic"):
        reward = WorldModelReward(WorldModelRewardConfig(representation=representation))
        text = write_belief(SOKOBAN_STATE, SOKOBAN, representation)
        out = reward.score(text, text, SOKOBAN_STATE, SOKOBAN_STATE, SOKOBAN)
        assert out["wm/reward"] == 1.0


def test_config_validation():
    with pytest.raises(ValueError, match="cannot parse"):
        WorldModelRewardConfig(representation="natural", matcher="structured")
    with pytest.raises(ValueError, match="representation"):
        WorldModelRewardConfig(representation="poetry")
    with pytest.raises(ValueError, match="needs an LLMJudge"):
        WorldModelReward(WorldModelRewardConfig(matcher="judge"))
    assert WorldModelRewardConfig(representation="natural").matcher == "natural"


def test_score_batch_matches_score():
    reward = WorldModelReward()
    obs = write_belief(FROZEN_STATE, FROZEN, "structured")
    items = [WorldModelItem(obs, obs, FROZEN_STATE, FROZEN_STATE, FROZEN),
             {"observation_text": "garbage", "prediction_text": obs, "state_before": FROZEN_STATE,
              "state_after": FROZEN_STATE, "schema": FROZEN, "format_valid": True}]
    out = reward.score_batch(items)
    assert [o["wm/reward"] for o in out] == [1.0, 0.5]
    assert out[1]["wm/observation_parsed"] == 0.0


def test_frequency_penalty_hits_a_repeated_bad_observation_only():
    config = WorldModelRewardConfig(frequency_penalty=0.2, frequency_min_count=3, frequency_low_score=0.5)
    reward = WorldModelReward(config)
    good = write_belief(FROZEN_STATE, FROZEN, "structured")
    stock = '{"player": [9, 9]}'
    bad = [reward.score(stock, good, FROZEN_STATE, FROZEN_STATE, FROZEN) for _ in range(3)]
    assert [o["wm/frequency_penalty"] for o in bad] == [0.0, 0.0, pytest.approx(0.1)]  # 0.5 weight * 0.2
    assert bad[2]["wm/reward"] == pytest.approx(0.5 - 0.1)
    assert bad[0]["wm/reward"] == pytest.approx(0.5)
    # The (repeated, correct) prediction is never penalised.
    assert all(o["wm/prediction"] == 1.0 for o in bad)


def _judge_fn(chat) -> str:
    return "<answer>YES</answer>" if "[0, 0]" in chat[0]["content"].split("<description>")[-1] else "NO"


def test_judge_matcher_batches_one_call():
    calls = []

    class Counting(ScriptedPolicy):
        def generate(self, chats, sampling=None):
            calls.append(len(chats))
            return super().generate(chats, sampling)

    judge = LLMJudge(Counting(_judge_fn))
    reward = WorldModelReward(WorldModelRewardConfig(representation="natural", matcher="judge"), judge=judge)
    items = [WorldModelItem("The player is at [0, 0].", "The player is at [0, 1].", FROZEN_STATE, FROZEN_AFTER,
                            FROZEN),
             WorldModelItem("The player is at [0, 0].", "oops", FROZEN_STATE, FROZEN_AFTER, FROZEN, False)]
    out = reward.score_batch(items)
    assert out[0]["wm/observation"] == 1.0 and out[0]["wm/prediction"] == 0.0
    assert out[0]["wm/reward"] == 0.5 and out[0]["wm/judge_parse_errors"] == 0.0
    assert out[1]["wm/reward"] == 0.0
    assert calls == [2]  # one batch; the invalid-format turn is not judged


def test_judge_outage_is_not_a_zero_reward():
    def down(chat):
        raise PolicyUnavailableError("down")

    reward = WorldModelReward(WorldModelRewardConfig(matcher="judge"), judge=LLMJudge(ScriptedPolicy(down)))
    with pytest.raises(PolicyUnavailableError):
        reward.score("a", "b", FROZEN_STATE, FROZEN_AFTER, FROZEN)


def test_ascore_batch():
    import asyncio

    reward = WorldModelReward()
    obs = write_belief(FROZEN_STATE, FROZEN, "structured")
    out = asyncio.run(reward.ascore_batch([WorldModelItem(obs, obs, FROZEN_STATE, FROZEN_STATE, FROZEN)]))
    assert out[0]["wm/reward"] == 1.0


def test_schema_tolerance_is_the_default_and_config_tol_overrides_it():
    from envs.base import EntitySpec, StateSchema
    from vagen.rewards.world_model import WorldModelReward, WorldModelRewardConfig

    schema = StateSchema(entities=(EntitySpec("cube", "point", "c", ("cube",), "a cube", dims=3),),
                         reference="cube", tolerance=20.0)
    state = {"entities": {"cube": [100, 50, 20]}}
    near = '{"cube": [110, 45, 24]}'  # 12 mm away
    default = WorldModelReward(WorldModelRewardConfig(representation="structured"))
    assert default.score(near, near, state, state, schema)["wm/observation"] == 1.0
    strict = WorldModelReward(WorldModelRewardConfig(representation="structured", tol=5.0))
    assert strict.score(near, near, state, state, schema)["wm/observation"] == 0.0
