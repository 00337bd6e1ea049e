"""env.expert from the config: the expert_edits feedback reaches a real HTTP server on
127.0.0.1 when env.expert = "openai"; reference and bad names build or fail in one line."""

import pytest

from mtrl.envs.code import CodeEnv, CodeEnvConfig
from mtrl.envs.code.experts import OpenAICompatibleExpert, ReferenceExpert
from mtrl.envs.code.experts.factory import build_expert
from mtrl.envs.sandbox import SandboxPool
from mtrl.data.suite import build_suite
from mtrl.training.config import base_config
from mtrl.training.config.readers import read_section
from tests.envs.code.experts.test_openai_compat import Server, ok_body


@pytest.fixture
def server():
    srv = Server()
    yield srv
    srv.close()


def test_openai_expert_from_config_answers_expert_edits(server):
    options = dict(base_url=server.url, model="coder-x", api_key_env=None, timeout_s=5.0,
                   max_retries=0)
    expert = build_expert("openai", options)
    assert isinstance(expert, OpenAICompatibleExpert)
    server.replies.append((200, ok_body("EDIT: return x + 3"), 0.0))
    c = base_config()
    c.data.num_train, c.data.num_eval = 4, 1
    task = build_suite(read_section(c, "data"), c.seed).tasks("train")[0]
    with SandboxPool(num_workers=1) as pool:
        env = CodeEnv(CodeEnvConfig(num_agents=1, feedback_mode="expert_edits"),
                      sandbox=pool, expert=expert)
        state, _ = env.reset(task)
        (result,) = env.step([state], [("```python\ndef f(x):\n    return 0\n```",)], 1)
    assert len(server.requests) == 1
    assert server.requests[0]["body"]["model"] == "coder-x"
    assert "EDIT: return x + 3" in result.observations[0]


def test_reference_and_none():
    assert isinstance(build_expert("reference", {"max_edits": 2}), ReferenceExpert)
    assert build_expert("", {}) is None


@pytest.mark.parametrize("kind, options, match", [
    ("oracle", {}, "config.env.expert: unknown 'oracle'"),
    ("openai", {"model": "m"}, "config.env.expert_options"),
    ("local", {"path": "/no/such/dir"}, "config.env.expert_options"),
    ("", {"model": "m"}, "env.expert is ''"),
])
def test_bad_expert_config_is_one_line(kind, options, match):
    with pytest.raises(ValueError, match=match) as error:
        build_expert(kind, options)
    assert "\n" not in str(error.value)


def test_build_components_passes_the_configured_expert():
    from mtrl.training.run.build import build_components
    from mtrl.training.config import parse
    from tests.training.loop.small_run import small_config
    c = small_config()
    c.env.feedback_mode, c.env.expert = "expert_edits", "reference"
    components = build_components(parse(c))
    try:
        assert isinstance(components.env._expert, ReferenceExpert)
    finally:
        components.close()
