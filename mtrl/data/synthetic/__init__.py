"""The embedded default task family: infer an integer function f(x) = g(x) + b from
one example; the first hidden test, shown by level_feedback, disambiguates.

See `mtrl.data.synthetic.family` for the design (ambiguity, why feedback helps,
how the splits stay disjoint).
"""

from mtrl.data.synthetic.demonstrations import (HELPER_NAME, Demonstration,
                                                RevisionDemonstration, demonstration,
                                                helper_completion, main_completion,
                                                revision_demonstrations, sft_demonstrations,
                                                single_agent_completion)
from mtrl.data.synthetic.family import (FamilyConfig, IntFunction, consistent_members,
                                        separating_probes)
from mtrl.data.synthetic.prompts import TINY_PROMPT_TEMPLATES
from mtrl.data.synthetic.tasks import (SPLITS, SyntheticSplits, SyntheticTask, ambiguity,
                                       heldout_offsets, load_intfn_tasks, make_splits)
from mtrl.data.synthetic.terms import TERMS, Term
