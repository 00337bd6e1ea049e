"""Environments, one package each (code, math, tool, textworld), the registry that
builds the one a run names (registry.py, `env.name`) and the sandbox jail. The protocol
they implement lives beside the generator that drives them: mtrl/rollout/environment.py.
(This module imports nothing, so the sandbox's worker processes stay light.)"""
