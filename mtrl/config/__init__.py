"""The experiment configuration's lowest layer: how a raw ml_collections section
becomes a validated frozen dataclass with one-line errors naming the field
(fields.py). Every package may import it; it imports nothing of mtrl's and no jax."""

from mtrl.config.fields import as_dict, build, known_fields

__all__ = ["as_dict", "build", "known_fields"]
