"""Short role prompts for the synthetic family and a tiny byte-level model.

The code environment's default templates spend ~300 bytes on instructions, more
than a ~1M-parameter model trained from scratch should have to attend over. These
keep every first-turn prompt under ~110 bytes (task text included) while saying
the same things: which function each agent writes and that main may call aux.
"""

from __future__ import annotations

from mtrl.envs.code.prompts import PromptTemplates

TINY_PROMPT_TEMPLATES = PromptTemplates(
    single="{prompt}",
    # Role first, task last: the example's value ends the prompt, a few tokens before
    # the answer that uses it.
    helper="{aux}(x) helps {entry_point}. {prompt}",
    main="{entry_point} may call {aux}(x). {prompt}",
    # The revision instruction restates the task, so the example's value again ends
    # the prompt at the same distance from the answer as in the first turn: what the
    # main agent learned to copy there works unchanged in a revision.
    revise="Revise {function}. {prompt}",
    # The helper's revision restates the task too, so every text an agent sees names
    # its task's numbers: a broken first helper or a passing probe leaves no bare
    # "Revise aux." that every split shares (tests/data/synthetic/test_default_disjoint).
    # Its answer is the failing probe's value, `f(1) - f(0) == 3` -> `def aux(x, k=3):`,
    # the number before the restated example's.
    revise_helper="Revise {function}. {prompt}",
)
