"""The SFT warm start: supervised fine-tuning on a suite's demonstrations.

  sft.py             examples, the masked next-token loss, the jitted SFT step, run_sft
  sft_data.py        the first phase's row kind, shared by every suite's demonstrations
  sft_checkpoint.py  checkpoints of the warm start, so a killed run resumes SFT exactly
  warm_start.py      WarmStarter: each policy's SFT, resumable, or another run's weights
"""
