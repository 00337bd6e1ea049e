"""Tool-integrated reasoning: the agent runs Python in the sandbox and then answers
(math word problems or code tasks), `ToolEnv`."""

from mtrl.envs.tool.env import ToolBranchState, ToolEnv, ToolEnvConfig, call_error, truncate
from mtrl.envs.tool.parse import KINDS, TurnAction, code_blocks, parse_turn
from mtrl.envs.tool.prompts import ToolTemplates

__all__ = ["KINDS", "ToolBranchState", "ToolEnv", "ToolEnvConfig", "ToolTemplates",
           "TurnAction", "call_error", "code_blocks", "parse_turn", "truncate"]
