"""mtrl: multi-turn, multi-agent reinforcement learning for LLM agents in JAX/Flax."""

__version__ = "0.1.0"
