"""LLM-as-judge with scripted policies: batching, caching, garbage answers, outages."""

from __future__ import annotations

import asyncio
import re

import pytest

from tests.rewards.schemas import SOKOBAN, SOKOBAN_STATE
from vagen.policy.base import PolicyUnavailableError
from vagen.policy.scripted import ScriptedPolicy
from vagen.rewards.judge import JudgeItem, LLMJudge, parse_judge_answer


class CountingPolicy(ScriptedPolicy):
    """A scripted policy that counts generate calls and chats."""

    def __init__(self, fn):
        super().__init__(fn, "judge")
        self.calls = 0
        self.chats = 0

    def generate(self, chats, sampling=None):
        self.calls += 1
        self.chats += len(chats)
        return super().generate(chats, sampling)


def truthful(chat) -> str:
    """Says YES when the description claims the player's true position."""
    prompt = chat[0]["content"]
    description = re.search(r"<description>\n(.*)\n</description>", prompt, re.S).group(1)
    return "<answer>YES</answer>" if "[2, 3]" in description else "Looking... <answer>NO</answer>"


def item(text: str, state=SOKOBAN_STATE) -> JudgeItem:
    return JudgeItem(text, state, SOKOBAN, "structured")


def test_batched_and_cached():
    policy = CountingPolicy(truthful)
    judge = LLMJudge(policy)
    items = [item('{"player": [2, 3]}'), item('{"player": [0, 0]}'), item('{"player": [2, 3]}')]
    verdicts = judge.judge(items)
    assert [v.score for v in verdicts] == [1.0, 0.0, 1.0]
    assert policy.calls == 1 and policy.chats == 2  # one batch; the duplicate asked once
    again = judge.judge(items[:2])
    assert [v.score for v in again] == [1.0, 0.0] and all(v.cached for v in again)
    assert policy.calls == 1  # served from the cache
    assert judge.stats["cache_hits"] == 2 and judge.cache_size() == 2
    # Env-specific extras outside the judged view do not change the key; the state does.
    other = dict(SOKOBAN_STATE, steps=99)
    assert LLMJudge.key(item("x", other)) == LLMJudge.key(item("x"))
    moved = dict(SOKOBAN_STATE, entities=dict(SOKOBAN_STATE["entities"], player=[2, 4]))
    assert LLMJudge.key(item("x", moved)) != LLMJudge.key(item("x"))


def test_prompt_holds_state_and_verbatim_description():
    seen = []
    judge = LLMJudge(CountingPolicy(lambda chat: seen.append(chat[0]["content"]) or "YES"))
    judge.judge([item("I see {grid} and {state} braces")])
    prompt = seen[0]
    assert '"boxes": [[3, 3], [1, 1]]' in prompt and "#__P_#" in prompt
    assert "I see {grid} and {state} braces" in prompt  # agent text is never templated
    assert "{" + "legend}" not in prompt


def test_garbage_answers_score_zero_and_count():
    answers = iter(["", "maybe?", "<answer>YES and NO</answer>", "<answer>7</answer>", "YES"])
    judge = LLMJudge(CountingPolicy(lambda chat: next(answers)))
    verdicts = judge.judge([item(f"text {i}") for i in range(5)])
    assert [v.score for v in verdicts] == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert [v.parse_error for v in verdicts] == [True, True, True, True, False]
    assert judge.stats["parse_errors"] == 4


def test_policy_outage_propagates_and_is_not_cached():
    def down(chat):
        raise PolicyUnavailableError("judge server unreachable")

    policy = CountingPolicy(down)
    judge = LLMJudge(policy)
    with pytest.raises(PolicyUnavailableError):
        judge.judge([item("a")])
    with pytest.raises(PolicyUnavailableError):
        judge.judge([item("a")])
    assert policy.calls == 2 and judge.cache_size() == 0


def test_ajudge_runs_in_a_thread():
    policy = CountingPolicy(truthful)
    judge = LLMJudge(policy)

    async def main():
        return await asyncio.gather(judge.ajudge([item('{"player": [2, 3]}')]), judge.ajudge([item("nope")]))

    first, second = asyncio.run(main())
    assert first[0].score == 1.0 and second[0].score == 0.0


def test_cache_is_bounded():
    policy = CountingPolicy(lambda chat: "YES")
    judge = LLMJudge(policy, max_cache=2)
    judge.judge([item("a"), item("b"), item("c")])
    assert judge.cache_size() == 2
    judge.judge([item("a")])  # evicted (least recently used)
    assert policy.calls == 2


def test_custom_prompt_file(tmp_path):
    path = tmp_path / "judge.txt"
    path.write_text("State {state}. Text {description}. YES or NO?")
    seen = []
    LLMJudge(CountingPolicy(lambda c: seen.append(c[0]["content"]) or "NO"), prompt_path=path).judge([item("t")])
    assert seen[0].startswith('State {"player": [2, 3]') and seen[0].endswith("Text t. YES or NO?")
    path.write_text("no placeholders")
    with pytest.raises(ValueError, match="placeholders"):
        LLMJudge(CountingPolicy(lambda c: ""), prompt_path=path)


@pytest.mark.parametrize("answer,expected", [
    ("<answer>YES</answer>", 1.0),
    ("<answer> no </answer>", 0.0),
    ("thinking <answer>NO</answer> wait <answer>Yes</answer>", 1.0),  # the last tag wins
    ("<answer>0.75</answer>", 0.75),
    ("<answer>80%</answer>", 0.8),
    ("<answer>It does not match.</answer>", 0.0),
    ("<answer>The description matches.</answer>", 1.0),
    ("There are no boxes, but the player is right.\nAnswer: YES", 1.0),
    ("YES", 1.0),
    ("<answer>1.5</answer>", None),
    ("<answer>yes no</answer>", None),
    ("", None),
    ("the weather is nice today and I like it a lot, " * 10, None),
    (None, None),
])
def test_parse_judge_answer(answer, expected):
    assert parse_judge_answer(answer) == expected


def test_judge_runs_on_the_real_tiny_model(tiny_policy):
    """Through a real transformers model the judge prompt fits and gibberish is a parse error."""
    judge = LLMJudge(tiny_policy)
    verdicts = judge.judge([item('{"player": [2, 3]}'), item("the player is lost")])
    assert len(verdicts) == 2
    for v in verdicts:
        assert 0.0 <= v.score <= 1.0
        assert v.parse_error or v.answer is not None
