"""Claims and the evidence for them: registered experiments with their predictions,
run over seeds and arms, compared with paired intervals (scripts/reproduce.py,
compare_methods.py and the multi-seed scripts).

  claims.py       a claim: a registered experiment with its prediction stated first
  arm_runs.py     the arms of a comparison from one shared SFT warm start per seed
  seed_runs.py    one trainer run per seed, each in a process and workdir of its own
  seed_stats.py   summary statistics of a number over seeds
  paired_ci.py    the paired difference of two arms with a 95% t interval; the verdict
  claim_table.py  the reproduction table in BENCHMARKS.md
"""
