"""Operator tools, each run from the repository root as `python -m tools.<name>`: runs
(reproduce a claim, the default over seeds, comparisons, sweeps, launches), data
(SmolLM2's weights, learnable-band task lists, split overlap) and checks (config
records, run records, the seccomp audit, SFT copy checks). Not installed with mtrl.
"""
