"""The experiment configuration's lowest layer: how a raw ml_collections section
becomes a validated frozen dataclass with one-line errors naming the field, every
error at once (fields.py: build_all, check_choice, ConfigErrors), and how the options
of registry entries (credit estimators, losses, environments) make up their section
(options.py). Every package may import it; it imports nothing of mtrl's and no jax."""

from mtrl.config.fields import (ConfigErrors, as_dict, build, build_all, check_choice,
                                known_fields)

__all__ = ["ConfigErrors", "as_dict", "build", "build_all", "check_choice", "known_fields"]
