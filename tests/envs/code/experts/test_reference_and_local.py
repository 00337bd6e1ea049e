import logging

import pytest

from mtrl.envs.code.experts import (LOOKS_CORRECT, ExpertRequest, LocalModelExpert,
                                    ReferenceExpert, build_expert_prompt)
from mtrl.envs.code.task import CodeTask

TASK = CodeTask(task_id="t", prompt="Sum of squares.", entry_point="f",
                tests=("assert f([2]) == 4",),
                canonical_solution="def f(xs):\n    total = 0\n    for x in xs:\n"
                                   "        total += x * x\n    return total\n")


def test_reference_expert_turns_the_diff_into_edits():
    candidate = ("def aux(xs):\n    return xs\n\n"
                 "def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n"
                 "    return total")
    text = ReferenceExpert().suggest(TASK, candidate, "")
    assert text == ("Edits to `f` (line numbers within the function):\n"
                    "- Replace line 4:\n            total += x\n"
                    "  with:\n            total += x * x")
    deleted = ReferenceExpert().suggest(TASK, candidate.replace("total += x", "total += x * x")
                                        .replace("    return total",
                                                 "    print(total)\n    return total"), "")
    assert "- Delete line 5:\n        print(total)" in deleted
    inserted = ReferenceExpert().suggest(TASK, "def f(xs):\n    total = 0\n    return total", "")
    assert "- After line 2 insert:\n        for x in xs:\n            total += x * x" in inserted


def test_reference_expert_caps_edits_and_handles_missing_pieces():
    many = "def f(xs):\n    a = 1\n    total = 0\n    b = 2\n    for x in xs:\n    c = 3\n" \
           "        total += x * x\n    d = 4\n    return total"
    text = ReferenceExpert(max_edits=2).suggest(TASK, many, "")
    assert text.count("- Delete") == 2 and text.endswith("(2 further edits omitted)")
    assert ReferenceExpert().suggest(TASK, "anything", "", all_passed=True) == LOOKS_CORRECT
    assert ReferenceExpert().suggest(TASK, TASK.canonical_solution, "") == LOOKS_CORRECT
    assert ReferenceExpert().suggest(TASK, "", "").startswith(
        "Write `f`; for example:\n    def f(xs):")
    no_reference = CodeTask(task_id="n", prompt="p", entry_point="g", tests=("assert g()",))
    assert ReferenceExpert().suggest(no_reference, "def g():\n    return 0", "") == ""
    with pytest.raises(ValueError):
        ReferenceExpert(max_edits=0)


def test_local_model_expert_batches_one_generate_call():
    calls = []

    def generate(prompts):
        calls.append(list(prompts))
        return [f"edit #{i}" + "\x00" for i, _ in enumerate(prompts)]

    expert = LocalModelExpert(generate, system_prompt="SYS")
    requests = [ExpertRequest(TASK, "def f(xs):\n    return 0", "diag A"),
                ExpertRequest(TASK, "def f(xs):\n    return 1", "diag B")]
    assert expert.suggest_batch(requests) == ["edit #0", "edit #1"]
    assert len(calls) == 1 and len(calls[0]) == 2
    expected = build_expert_prompt(TASK, "def f(xs):\n    return 1", "diag B")
    assert calls[0][1] == "SYS\n\n" + expected
    assert expert.suggest(TASK, "x", "y") == "edit #0"
    assert expert.suggest_batch([]) == [] and len(calls) == 2


def test_local_model_expert_checks_the_model_output(caplog):
    two = [ExpertRequest(TASK, "a", ""), ExpertRequest(TASK, "b", "")]
    expert = LocalModelExpert(lambda prompts: ["only one"])
    with caplog.at_level(logging.WARNING, logger="mtrl.envs.code.experts.local"):
        assert expert.suggest_batch(two) == ["", ""]  # which one is whose is unknown
    assert "returned 1 completions for 2 prompts" in caplog.text
    capped = LocalModelExpert(lambda prompts: [b"\xffabc" * 100], max_suggestion_chars=5)
    assert capped.suggest(TASK, "a", "") == "\ufffdabc\ufffd"
    with pytest.raises(TypeError):
        LocalModelExpert("not callable")  # type: ignore[arg-type]


def test_local_model_expert_never_raises_on_a_failing_model(caplog):
    def broken(prompts):
        raise RuntimeError("device lost")

    two = [ExpertRequest(TASK, "a", ""), ExpertRequest(TASK, "b", "")]
    with caplog.at_level(logging.WARNING, logger="mtrl.envs.code.experts.local"):
        assert LocalModelExpert(broken).suggest_batch(two) == ["", ""]
        assert LocalModelExpert(lambda prompts: None).suggest(TASK, "a", "") == ""
        assert LocalModelExpert(lambda prompts: [None, " ok "]).suggest_batch(two) == ["", "ok"]
    assert "RuntimeError: device lost" in caplog.text
    assert "returned a NoneType, not text" in caplog.text
    assert len(caplog.records) == 3


def test_expert_prompt_contents():
    prompt = build_expert_prompt(TASK, "", "")
    assert "Sum of squares." in prompt and "(the agents produced no code)" in prompt
    assert "Diagnostics" not in prompt and "assert f([2])" not in prompt
