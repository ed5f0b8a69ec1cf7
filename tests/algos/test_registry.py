"""The registries resolve every configured name and reject unknown ones clearly."""

from __future__ import annotations

import typing

import pytest

from vagen.algos import ADVANTAGE_LEVELS, ADVANTAGES, FILTERS, get_advantage, get_filter, gigpo, starpo_s
from vagen.config.schema import AlgoConfig


def test_every_config_choice_is_registered():
    advantage_choices = typing.get_args(AlgoConfig.model_fields["advantage"].annotation)
    filter_choices = typing.get_args(AlgoConfig.model_fields["filter"].annotation)
    assert set(advantage_choices) <= set(ADVANTAGES)
    assert set(filter_choices) <= set(FILTERS)
    assert set(ADVANTAGE_LEVELS) == set(ADVANTAGES)


def test_lookup():
    assert get_advantage("gigpo") is gigpo
    assert get_filter("starpo_s") is starpo_s
    with pytest.raises(ValueError, match="bilevel_gae, dr_grpo, gae, gigpo, grpo"):
        get_advantage("ppo")
    with pytest.raises(ValueError, match="none, starpo_s, uis1, zero_variance"):
        get_filter("top_k")
