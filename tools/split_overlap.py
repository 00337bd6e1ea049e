"""How many held-out inputs of each suite occur in its training split, rendered through
the real environment (mtrl/data/overlap.py): the figure docs/suites.md reports.

    python -m tools.split_overlap --out overlap.json                 # every config
    python -m tools.split_overlap --configs default,math --out o.json

Per experiment config: each split's first-turn prompts per agent (env.reset), compared
verbatim with the train split's; the share of held-out prompts seen in training and of
those seen only with another right answer (the canonical solution). Turn-2 observations
depend on the first attempt, which only the default family's test renders exhaustively
(tests/data/synthetic/test_default_disjoint.py); here the first turn is what every suite
is measured on. Suites whose data are missing on this machine are recorded with the
one-line reason.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

from mtrl.data.overlap import overlap, visible_texts
from mtrl.data.suite import build_suite
from mtrl.envs.registry import build_environment
from mtrl.training.config import module_from_file, parse
from mtrl.training.run.provenance import code_state

ROOT = pathlib.Path(__file__).resolve().parents[1]

CONFIGS = ("default", "math", "tool", "tool_calc", "textworld", "mbpp_grpo", "humaneval_grpo")


def measure(name: str) -> dict:
    config = module_from_file(ROOT / "experiments" / "configs" / f"{name}.py").get_config()
    run = parse(config)
    suite = build_suite(run.data, run.seed)
    from mtrl.training.run.build import build_tokenizer
    tokenizer = build_tokenizer(run.tokenizer, run.model)  # tool and TextWorld read it
    built = build_environment(run.env, run.rollout.num_turns, run.data.name, suite, tokenizer)
    try:
        train = visible_texts(built.env, suite.tasks("train"), answers=_answers)
        splits = {"validation": suite.tasks("validation")}
        if run.data.test_split:
            splits["test"] = suite.tasks("test")
        splits.update(getattr(suite, "extra_test_splits", dict)())
        out = {"suite": run.data.name, "env": run.env.name, "splits": {}}
        for split, tasks in splits.items():
            found = overlap(train, visible_texts(built.env, tasks, answers=_answers))
            out["splits"][split] = {
                "tasks": len(tasks), "distinct_prompts": sum(found.total.values()),
                "seen_in_train": sum(found.seen.values()),
                "seen_only_with_another_answer": sum(found.seen_other_answer.values()),
                "fraction_seen": found.fraction(), "examples": list(found.examples)}
        return out
    finally:
        built.close()


def _answers(task):
    answer = (getattr(task, "canonical_solution", None) or getattr(task, "answer", None)
              or getattr(task, "solution", None))
    return (str(answer),) * 8  # one per agent (at most a few agents)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    result = {"command": "python -m tools.split_overlap " + " ".join(argv or sys.argv[1:]),
              "code": code_state(), "configs": {}}
    for name in filter(None, args.configs.split(",")):
        started = time.perf_counter()
        try:
            result["configs"][name] = measure(name)
        except (ValueError, FileNotFoundError, OSError, ImportError) as error:
            result["configs"][name] = {"error": f"{type(error).__name__}: {error}"[:300]}
        result["configs"][name]["seconds"] = time.perf_counter() - started
        print(name, json.dumps({k: (v if k != "splits" else {s: d["fraction_seen"] for s, d in
                                                            v.items()})
                                for k, v in result["configs"][name].items()}), flush=True)
    pathlib.Path(args.out).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
