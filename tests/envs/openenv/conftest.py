"""One toy OpenEnv server per test session (worker) for the files that can share it."""

import pytest


@pytest.fixture(scope="session")
def toy_url():
    pytest.importorskip("openenv.core")
    from tests.envs.openenv.servers import free_port, toy_server
    with toy_server(free_port()) as (url, _):
        yield url
