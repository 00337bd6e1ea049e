"""What a run keeps and hands on.

  checkpointing.py    the best k RL checkpoints by held-out success, plus the latest
  prng_checkpoint.py  typed PRNG keys in checkpoints
  hf_export.py        a trained policy as a Hugging Face directory
  run_record.py       what a finished run returns: best checkpoint, its numbers, paths
"""
