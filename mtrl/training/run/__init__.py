"""What every stage of a run shares, below the config reader (config/ imports the
sections and the chat format from here; the loop and the warm start take the rest).

  sections.py       the trainer's own sections: train, sft, model
  chat.py           the chat section and each agent's turn format
  build.py          a run's components from its RunConfig: tokenizer, models, suite, env
  inputs.py         files a config names that a run cannot make: each missing one named
                    with the command that makes it (no jax: mtrl/train.py checks first)
  keys.py           the run's named random streams, split once from the root key
  interrupts.py     SIGINT/SIGTERM stop at a safe point
  run_config.py     the resolved config in the workdir, compared on resume
"""
