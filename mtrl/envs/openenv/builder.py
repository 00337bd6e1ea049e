"""`env.name = "openenv"`: an environment served over OpenEnv's protocol (env.py) on
the `openenv` suite's episodes (EpisodeTask); its options are OpenEnvConfig's fields
(env.url, env.action_key, env.observation_key, env.success_reward, env.timeout_s,
env.retries, env.concurrency, env.max_observation_chars).

The build asks the server for its action schema (GET /schema): so a server that is
not up fails here, in one line, before any model work, and an unset `env.action_key`
is the action's only string field. A tool-call action (OpenEnv's CallToolAction, as
its verifiers importer serves) takes env.action_key = "TOOL.ARGUMENT": each completion
is the call {"tool_name": TOOL, "arguments": {ARGUMENT: completion}}."""

from __future__ import annotations

from mtrl.envs.openenv.env import OpenEnvConfig
from mtrl.envs.openenv.task import EpisodeTask
from mtrl.envs.registry import BuiltEnv, EnvRequest, register_env


TOOL_FIELDS = {"tool_name", "arguments"}  # OpenEnv's CallToolAction (MCP tool calls)


def action_key_from_schema(url: str, timeout_s: float) -> tuple[str, list[str]]:
    """(the action's only string field or "", every string field) of the server's
    /schema ("", ["tool_name", "arguments"] for a tool-call action); ValueError
    naming the server when it does not answer."""
    import requests
    http = url.replace("ws://", "http://", 1).replace("wss://", "https://", 1).rstrip("/")
    try:
        reply = requests.get(f"{http}/schema", timeout=timeout_s)
        reply.raise_for_status()
        properties = reply.json()["action"].get("properties", {})
    except (requests.RequestException, ValueError, KeyError, AttributeError) as e:
        raise ValueError(f"config.env.url: no OpenEnv server answers GET {http}/schema "
                         f"({_why(e, timeout_s)}); start it first") from None
    if TOOL_FIELDS <= set(properties):
        return "", sorted(TOOL_FIELDS)
    strings = sorted(name for name, spec in properties.items()
                     if name != "metadata" and spec.get("type") == "string")
    return (strings[0] if len(strings) == 1 else ""), strings


def _why(error: Exception, timeout_s: float) -> str:
    """Why the schema request failed, in a few words (requests' own text repeats the
    URL inside nested reprs, and cut short it ends mid-URL)."""
    import requests
    if isinstance(error, requests.ConnectionError) and not isinstance(error, requests.Timeout):
        return "connection refused or host unreachable"
    if isinstance(error, requests.Timeout):
        return f"no answer within env.timeout_s={timeout_s:g} s"
    if isinstance(error, requests.HTTPError) and error.response is not None:
        return f"HTTP {error.response.status_code}"
    if isinstance(error, requests.RequestException):
        return type(error).__name__
    return "the reply is not an OpenEnv schema with an 'action'"


# An episode ends at its first success (the default ends_on_success) or at the server's
# done.
@register_env("openenv", options=OpenEnvConfig, plays=EpisodeTask)
def build_openenv_env(request: EnvRequest) -> BuiltEnv:
    from mtrl.envs.openenv.env import OpenEnvEnvironment
    if request.env.num_agents != 1:
        raise ValueError(f"config.env.num_agents: an OpenEnv environment has one agent, got "
                         f"{request.env.num_agents}")
    config = request.env.options
    if not config.url:
        raise ValueError("config.env.url: unset; name the OpenEnv server "
                         "(http://host:port, e.g. $MTRL_OPENENV_URL in "
                         "experiments/configs/openenv.py)")
    found, strings = action_key_from_schema(config.url, config.timeout_s)
    if strings == sorted(TOOL_FIELDS):  # a tool environment (e.g. an imported verifiers one)
        tool, dot, argument = config.action_key.partition(".")
        if not (tool and dot and argument):
            raise ValueError("config.env.action_key: the server's action is a tool call "
                             "(tool_name, arguments); name the tool and the argument that "
                             "carries the completion as TOOL.ARGUMENT (OpenEnv's verifiers "
                             "importer: submit.completion)"
                             + (f", got {config.action_key!r}" if config.action_key else ""))
        return BuiltEnv(OpenEnvEnvironment(config, config.action_key, tool_call=True))
    key = config.action_key or found
    if not key or key not in strings:
        raise ValueError(f"config.env.action_key: the server's action has the string "
                         f"fields {strings}; name the one that carries the completion"
                         + (f" (got {config.action_key!r})" if config.action_key else ""))
    return BuiltEnv(OpenEnvEnvironment(config, key))
