"""Scripted agents that answer in a reasoning format from the env's true state.

A chat built by ``AgentEnv.user_message`` carries ``oracle_context`` (env name, state,
format, representation, action limits) on its last user message. Backends ignore that
key; these scripted policies read it:

- ``scripted:oracle``: the env's solver picks the actions; ``<observation>`` and
  ``<prediction>`` are written from the true current and predicted states, so it earns
  full success and the maximum world-modeling reward on deterministic envs.
- ``scripted:random`` without ``answers``: uniformly random actions (1..K) in a valid
  format, with uninformative beliefs — the chance-level baseline.
"""

from __future__ import annotations

import random
from typing import Any

from vagen.policy.base import Chat, PolicyRequestError
from vagen.prompts.formats import get_format


def find_context(chat: Chat) -> dict[str, Any]:
    """The ``oracle_context`` of the last user message that has one."""
    for msg in reversed(chat):
        if isinstance(msg, dict) and isinstance(msg.get("oracle_context"), dict):
            return msg["oracle_context"]
    raise PolicyRequestError("this scripted policy needs the env's oracle_context on the user message; "
                             "build messages with vagen.prompts.AgentEnv.user_message")


def oracle_response(ctx: dict[str, Any]) -> str:
    """The solver's next actions, with true observation and predicted next state."""
    import envs
    from vagen.prompts.belief import write_belief

    cls = envs.env_class(ctx["env"])
    state = ctx["state"]
    plan = cls.solve_state(state) or []
    actions = plan[: ctx["max_actions"]]
    if not actions and cls.action_names:
        actions = [cls.action_names[0]]  # unsolvable from here: still answer with a legal move
    nxt = cls.predict_state(state, actions)
    rep = ctx["representation"]
    if plan:
        n = len(plan)
        reasoning = (f"The shortest plan from here takes {n} move{'s' if n != 1 else ''}: {', '.join(plan)}. "
                     + ("I take all of them." if len(actions) == n else f"I take the first {len(actions)}."))
    else:
        reasoning = "I see no plan that solves this; I try a move."
    return get_format(ctx["format"]).render(
        answer=f"{ctx['separator']} ".join(actions),
        think=reasoning,
        observation=write_belief(state, cls.state_schema, rep),
        reasoning=reasoning,
        prediction=write_belief(nxt, cls.state_schema, rep),
    )


def random_response(ctx: dict[str, Any], rng: random.Random) -> str:
    """1..K uniformly random actions in a valid format, with uninformative beliefs."""
    import envs

    cls = envs.env_class(ctx["env"])
    k = rng.randint(1, max(1, ctx["max_actions"]))
    try:
        actions = cls.random_actions(rng, k, ctx.get("state"))
    except NotImplementedError as e:
        raise PolicyRequestError(f"env {ctx['env']!r}: {e}; pass answers=[...]") from None
    return get_format(ctx["format"]).render(
        answer=f"{ctx['separator']} ".join(actions), think="I act at random.", observation="unknown",
        reasoning="I act at random.", prediction="unknown")

