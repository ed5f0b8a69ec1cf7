import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vagen.prompts.formats import FORMATS, get_format
from vagen.prompts.parser import parse_response

GOOD = {
    "no_think": "<answer>Up, Left</answer>",
    "free_think": "<think>the box is right of me</think>\n<answer>Right</answer>",
    "grounding": "<think><observation>player at [1,2]</observation><reasoning>go down</reasoning></think><answer>Down</answer>",
    "worldmodeling": "<think><reasoning>go down</reasoning><prediction>player at [2,2]</prediction></think><answer>Down</answer>",
    "grounding_worldmodeling": ("<think><observation>o</observation><reasoning>r</reasoning>"
                                "<prediction>p</prediction></think><answer>Down, Down</answer>"),
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_good_responses_pass(fmt):
    p = parse_response(GOOD[fmt], fmt)
    assert p.format_ok, p.errors
    assert p.actions and p.answer


@pytest.mark.parametrize("fmt, text, needle", [
    ("free_think", "<answer>Up</answer>", "<think>"),
    ("free_think", "<think>a</think><answer>Up</answer> trailing", "outside"),
    ("free_think", "<answer>Up</answer><think>a</think>", "order"),
    ("no_think", "<think>a</think><answer>Up</answer>", "not part"),
    ("no_think", "<answer> </answer>", "no action"),
    ("grounding", "<think><reasoning>r</reasoning><observation>o</observation></think><answer>Up</answer>", "order"),
    ("grounding", "<think><observation></observation><reasoning>r</reasoning></think><answer>Up</answer>", "empty"),
    ("grounding", "<think>x<observation>o</observation><reasoning>r</reasoning></think><answer>Up</answer>", "inside <think>"),
    ("worldmodeling", "<think><reasoning>r</reasoning></think><answer>Up</answer>", "<prediction>"),
    ("no_think", "<answer>Up</answer><answer>Down</answer>", "exactly one"),
])
def test_bad_responses_fail_with_reason(fmt, text, needle):
    p = parse_response(text, fmt)
    assert not p.format_ok and any(needle in e for e in p.errors), p.errors


def test_answer_is_still_extracted_from_a_sloppy_response():
    p = parse_response("blah <answer>Left, Up</answer> blah", "free_think")
    assert not p.format_ok and p.actions == ["Left", "Up"]


def test_too_many_actions_is_a_format_error():
    p = parse_response("<answer>Up, Up, Up</answer>", "no_think", max_actions=2)
    assert not p.format_ok and "at most 2" in p.errors[-1]


def test_unknown_format_is_a_clear_error():
    with pytest.raises(ValueError, match="allowed"):
        parse_response("x", "deep_think")


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(st.text(max_size=500),
                      st.lists(st.sampled_from(["<think>", "</think>", "<answer>", "</answer>", "<observation>",
                                                "</observation>", "<prediction>", "</prediction>", "<reasoning>",
                                                "</reasoning>", "Up", ",", " ", "x"]), max_size=30).map("".join)),
       fmt=st.sampled_from(sorted(FORMATS)))
def test_parser_never_raises(text, fmt):
    p = parse_response(text, fmt)
    assert isinstance(p.format_ok, bool)
    assert p.format_ok == (not p.errors)


@settings(max_examples=200, deadline=None)
@given(fmt=st.sampled_from(sorted(FORMATS)),
       parts=st.lists(st.text(alphabet=st.characters(blacklist_characters="<>", blacklist_categories=("Cs",)),
                              min_size=1, max_size=40).filter(str.strip), min_size=4, max_size=4),
       actions=st.lists(st.sampled_from(["Up", "Down", "Left", "Right"]), min_size=1, max_size=3))
def test_render_then_parse_round_trips(fmt, parts, actions):
    f = get_format(fmt)
    text = f.render(answer=", ".join(actions), think=parts[0], observation=parts[1], reasoning=parts[2],
                    prediction=parts[3])
    p = parse_response(text, fmt)
    assert p.format_ok, p.errors
    assert p.actions == actions
    if f.has_observation:
        assert p.observation == parts[1].strip()
    if f.has_prediction:
        assert p.prediction == parts[3].strip()


@pytest.mark.parametrize("value", [None, 12, b"<answer>Up</answer>", ["<answer>Up</answer>"]])
def test_non_string_input(value):
    assert isinstance(parse_response(value, "no_think").format_ok, bool)
