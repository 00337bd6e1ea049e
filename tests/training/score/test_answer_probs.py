"""IGPO's answer log-probs: the batched, padded computation of the trainer equals a
direct per-node forward pass (one unpadded sequence at a time), for one agent and
for two agents with separate policies; the estimator then accepts the tree."""

import dataclasses
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.data.gsm8k import MathTask
from mtrl.envs.math import MathEnv, MathEnvConfig
from mtrl.models import PRESETS, Transformer
from mtrl.rollout import PlainFormat, RolloutConfig, StepRollout, rollout
from mtrl.tokenizers import load_tokenizer
from mtrl.training.score.answer_probs import (ANSWER_INSTRUCTION, ANSWER_PREFIX,
                                                     answer_queries, derived_info_keys,
                                                     fill_answer_logprobs, scores_answers)
from mtrl.training.run.built_rules import estimator_info
from mtrl.training.advantages.estimators import (CREDIT_ESTIMATORS, CreditConfig,
                                                token_advantages)
from tests.rollout.scripted import ScriptedBackend

MODEL = dataclasses.replace(PRESETS.get("tiny"), num_layers=1, hidden_size=32,
                            intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2)
TASKS = [MathTask("t/0", "What is 2 + 5?", "7"), MathTask("t/1", "What is 10 * 12?", "120")]


def direct(model, tokenizer, prefix_text_ids, answer: str) -> float:
    """Mean log π(answer tokens | prefix) from one unpadded forward pass."""
    answer_ids = tokenizer.encode(answer)
    seq = jnp.asarray([list(prefix_text_ids) + answer_ids], jnp.int32)
    logits = model(seq)[0]
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    start = len(prefix_text_ids)
    picks = [float(logp[start + i - 1, tok]) for i, tok in enumerate(answer_ids)]
    return float(np.mean(picks))


@pytest.mark.parametrize("num_agents", [2])  # separate policies, averaged
def test_batched_answer_logprobs_equal_a_direct_per_node_forward(num_agents):
    tokenizer = load_tokenizer("byte")
    fmt = PlainFormat()
    env = MathEnv(MathEnvConfig(num_agents=num_agents, feedback_mode="correctness"))
    config = RolloutConfig(num_turns=2, num_generations=2, num_agents=num_agents,
                           max_new_tokens=16, max_context=512)
    tree = rollout(TASKS, env, ScriptedBackend(), tokenizer, config, jax.random.key(0), fmt)
    models = [Transformer(MODEL, rngs=nnx.Rngs(a)) for a in range(num_agents)]
    graphdef = nnx.split(models[0])[0]
    params = [nnx.split(m)[1] for m in models]
    filled = fill_answer_logprobs(tree, graphdef, params, tokenizer, fmt, batch_rows=8)

    g, joint = config.num_generations, tree.joint_index
    prefix = tokenizer.encode(ANSWER_PREFIX)
    checked = 0
    prior_cache = {}
    for t, record in enumerate(filled.turns):
        for m, node in enumerate(record.node_index):
            task = int(node) // tree.joint_actions ** t
            for j in range(tree.joint_actions):
                info = record.infos[m * tree.joint_actions + j]
                truth = TASKS[task].answer
                values, priors = [], []
                for a in range(num_agents):
                    completion = record.completions[a][m * g + int(joint[j, a])]
                    # h_t holds turn t's observation; the instruction shares its message.
                    observation = record.observations[a][m * tree.joint_actions + j]
                    stopped = bool(completion) and completion[-1] == tokenizer.eos_id
                    cue = tokenizer.encode(fmt.next(f"{observation}\n{ANSWER_INSTRUCTION}",
                                                    stopped))
                    history = list(record.contexts[a][m]) + list(completion) + cue + prefix
                    values.append(direct(models[a], tokenizer, history, truth))
                    if (task, a) not in prior_cache:
                        first = filled.turns[0]
                        root = int(np.flatnonzero(first.node_index == task)[0])
                        prior_cache[task, a] = direct(
                            models[a], tokenizer, list(first.contexts[a][root]) + prefix, truth)
                    priors.append(prior_cache[task, a])
                np.testing.assert_allclose(info["answer_logprob"], np.mean(values),
                                           rtol=1e-4, atol=1e-4)
                np.testing.assert_allclose(info["answer_logprob_prior"], np.mean(priors),
                                           rtol=1e-4, atol=1e-4)
                checked += 1
    assert checked == sum(len(r.infos) for r in tree.turns) > len(TASKS)
    # Values differ across steps (histories differ), and the original infos are kept.
    all_values = [i["answer_logprob"] for r in filled.turns for i in r.infos]
    assert len(set(np.round(all_values, 6))) > 1
    assert all("truth" in i and "correct" in i for r in filled.turns for i in r.infos)
    assert all("answer_logprob" not in i for r in tree.turns for i in r.infos)

    credit = CreditConfig(estimator="igpo")
    advantages = token_advantages(credit, StepRollout.of(filled), 1.0)
    assert np.isfinite(np.asarray(advantages)).all() and np.abs(np.asarray(advantages)).sum() > 0


def test_igpo_is_accepted_for_an_env_that_reports_the_truth_only():
    env = MathEnv()
    assert derived_info_keys(env.info_keys) == {"answer_logprob", "answer_logprob_prior"}
    assert scores_answers(CREDIT_ESTIMATORS.get("igpo").needs, env.info_keys)
    assert not scores_answers(CREDIT_ESTIMATORS.get("ufo").needs, env.info_keys)
    estimator_info(SimpleNamespace(credit=CreditConfig(estimator="igpo")), env)  # no error
    with pytest.raises(ValueError, match="anchor_id"):
        estimator_info(SimpleNamespace(credit=CreditConfig(estimator="gigpo")), env)


@pytest.mark.parametrize("history_mode", ["full", "last"])
def test_turn_t_gain_is_scored_after_turn_t_observation(history_mode):
    """IGPO conditions m_t on the history through turn t's observation (the tool output
    or "Try again." that answered turn t), not only on turn t's completion."""
    tokenizer = load_tokenizer("byte")
    env = MathEnv(MathEnvConfig(feedback_mode="correctness", history_mode=history_mode))
    config = RolloutConfig(num_turns=2, num_generations=2, num_agents=1, max_new_tokens=16,
                           max_context=1024)
    tree = rollout(TASKS[:1], env, ScriptedBackend(), tokenizer, config, jax.random.key(0),
                   PlainFormat())
    steps, where, _ = answer_queries(tree, tokenizer, PlainFormat(), 0)
    for query, (t, i) in zip(steps, where):
        observation = tree.turns[t].observations[0][i]
        text = tokenizer.decode(list(query.prefix))
        assert observation and observation in text and text.endswith(ANSWER_PREFIX)
        # The observation comes after turn t's completion, the instruction after both.
        completion = tokenizer.decode(tree.turns[t].completions[0][
            (i // tree.joint_actions) * 2 + int(tree.joint_index[i % tree.joint_actions, 0])])
        if history_mode == "full":
            assert text.rindex(completion) < text.rindex(observation)
        assert text.rindex(observation) < text.rindex(ANSWER_INSTRUCTION)
    assert len(steps) == sum(len(r.infos) for r in tree.turns)
