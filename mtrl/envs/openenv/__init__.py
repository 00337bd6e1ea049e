"""Environments over OpenEnv's protocol (the openenv package, 0.10: the `openenv`
extra), both ways:

  client.py   whole episodes on an OpenEnv server through the protocol's own client,
              with timeouts, retries and checked replies
  env.py      an OpenEnv server as a multi-turn mtrl environment (env.name=openenv)
  builder.py  its registration (options: OpenEnvConfig's env.* fields) and the server's action schema
  task.py     an episode's reset arguments (the `openenv` suite's tasks)
  tasks.py    a server's task list (OpenEnv's task API) as train / validation / test
  traces.py   a rollout's episodes as OpenEnv training traces, written and read back
  imports.py  openenv's modules imported without its Gradio web interface
  server_limits.py  what one client can hold of a server: its request bodies, its
              idle sessions (ASGI middleware; mtrl/serve_openenv.py)
The reverse, mtrl's sandboxed code environment served as an OpenEnv server, is an
entry point beside mtrl/train.py (mtrl/serve_openenv.py: it composes a data suite and
an environment, so it sits above both layers).

Nothing here imports openenv until an environment is built or served.
"""
