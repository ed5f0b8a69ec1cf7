import envs
import envs.grid
from envs.base import EnvInfraError
from vagen.policy import SamplingParams
from vagen.prompts import AgentConfig, AgentEnv
from vagen.rollout import ContextBuilder, RolloutLimits, RolloutManager


class FlakyEnv(AgentEnv):
    """Raises an infra error on its second step when it plays seed 13."""

    def reset(self, *, seed=None, options=None):
        self._steps = 0
        self._seed = seed
        return super().reset(seed=seed, options=options)

    def step(self, response):
        self._steps += 1
        if self._seed == 13 and self._steps == 2:
            raise EnvInfraError("sandbox died")
        return super().step(response)


def test_groups_share_seeds_and_records_are_complete(tiny_policy):
    builder = ContextBuilder(tiny_policy.processor)
    mgr = RolloutManager(lambda: AgentEnv(envs.make("frozenlake", observation="image+text"), AgentConfig()),
                         tiny_policy, builder, RolloutLimits(max_turns=2))
    trajs, m = mgr.collect([5, 6], 3, SamplingParams(max_tokens=8), sample_seed=0)
    assert [t.seed for t in trajs] == [5, 5, 5, 6, 6, 6] and [t.group_id for t in trajs] == [0, 0, 0, 1, 1, 1]
    first = [t.turns[0].anchor_key for t in trajs]
    assert first[0] == first[1] == first[2] != first[3]  # same level, same first observation
    for t in trajs:
        assert t.done and t.end_reason
        for u in t.turns:
            assert len(u.response_ids) == len(u.rollout_logprobs) and u.policy_version == tiny_policy.policy_version
            assert u.reward == u.reward_env + u.reward_format + u.reward_world_model + u.reward_penalty
            assert not u.format_ok and u.reward_penalty < 0  # a random model's garbage is penalised, not fatal
    assert m["rollout/trajectories"] == 6 and m["rollout/dropped_infra"] == 0


def test_infra_error_drops_only_that_trajectory(tiny_policy):
    builder = ContextBuilder(tiny_policy.processor)
    mgr = RolloutManager(lambda: FlakyEnv(envs.make("sokoban", observation="text"), AgentConfig("no_think")),
                         tiny_policy, builder, RolloutLimits(max_turns=3))
    trajs, m = mgr.collect([13, 14], 2, SamplingParams(max_tokens=8), sample_seed=0)
    dropped = [t for t in trajs if t.dropped]
    assert {t.seed for t in dropped} == {13} and len(dropped) == 2
    assert all(t.end_reason == "infra_error" for t in dropped)
    assert m["rollout/dropped_infra"] == 2
    assert all(len(t.turns) == 3 for t in trajs if not t.dropped)


def test_token_budget_ends_trajectories(tiny_policy):
    builder = ContextBuilder(tiny_policy.processor)
    mgr = RolloutManager(lambda: AgentEnv(envs.make("sokoban", observation="text"), AgentConfig("no_think")),
                         tiny_policy, builder, RolloutLimits(max_turns=5, max_tokens_per_trajectory=20))
    trajs, m = mgr.collect([1], 2, SamplingParams(max_tokens=16), sample_seed=0)
    for t in trajs:
        assert t.response_tokens <= 20
        assert t.end_reason == "token_budget"
    assert m["rollout/end_token_budget"] == 1.0


def test_rollouts_are_reproducible_with_a_sample_seed(tiny_policy):
    builder = ContextBuilder(tiny_policy.processor)
    make = lambda: AgentEnv(envs.make("frozenlake", observation="text"), AgentConfig("no_think"))  # noqa: E731
    a, _ = RolloutManager(make, tiny_policy, builder).collect([2], 2, SamplingParams(max_tokens=8), sample_seed=9)
    b, _ = RolloutManager(make, tiny_policy, builder).collect([2], 2, SamplingParams(max_tokens=8), sample_seed=9)
    assert [[u.response_ids for u in t.turns] for t in a] == [[u.response_ids for u in t.turns] for t in b]


class ScriptedBumpEnv(AgentEnv):
    """Ignores the model: first walks into a wall, then answers out of format."""

    def reset(self, *, seed=None, options=None):
        self._steps = 0
        return super().reset(seed=seed, options=options)

    def step(self, response):
        self._steps += 1
        if self._steps > 1:
            return super().step("no tags at all")
        inner = self.env.unwrapped
        r, c = inner.player
        move = next(d for d, (dr, dc) in envs.grid.DIRECTIONS.items() if (r + dr, c + dc) in inner.walls)
        return super().step(self.patch_response(move))


def test_anchor_ignores_feedback_on_the_previous_step(tiny_policy):
    """A bump and a malformed answer leave the map as it was: with ``anchor=state`` the three
    turns share one GiGPO anchor (the env's "Nothing changed." and the format note are history);
    with ``anchor=observation`` they are three different anchors."""
    builder = ContextBuilder(tiny_policy.processor)
    keys = {}
    for mode in ("state", "observation"):
        mgr = RolloutManager(lambda: ScriptedBumpEnv(envs.make("sokoban", observation="text", max_turns=3), AgentConfig()),
                             tiny_policy, builder, RolloutLimits(max_turns=3, anchor=mode))
        trajs, _ = mgr.collect([4], 1, SamplingParams(max_tokens=4), sample_seed=0)
        turns = trajs[0].turns
        assert len(turns) == 3 and not turns[0].action_effective and not turns[1].format_ok
        keys[mode] = [u.anchor_key for u in turns]
    assert len(set(keys["state"])) == 1
    assert len(set(keys["observation"])) == 3
    assert keys["observation"][0] == keys["state"][0]  # the first observation carries no feedback
