"""The agent layer: reasoning formats, response parsing, belief representations,
prompt building, ``AgentEnv`` and the scripted oracle.

Envs know nothing about reasoning tags; everything that reads or writes ``<think>``,
``<observation>``, ``<prediction>`` or ``<answer>`` lives here.
"""

from vagen.prompts.agent_env import AgentConfig, AgentEnv
from vagen.prompts.belief import Belief, parse_belief, write_belief
from vagen.prompts.formats import FORMATS, REPRESENTATIONS, ReasoningFormat, get_format
from vagen.prompts.parser import ParsedResponse, parse_response

__all__ = ["FORMATS", "REPRESENTATIONS", "AgentConfig", "AgentEnv", "Belief", "ParsedResponse", "ReasoningFormat",
           "get_format", "parse_belief", "parse_response", "write_belief"]
