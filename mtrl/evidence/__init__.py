"""The evidence machinery, above mtrl.training (it imports training; nothing in training
imports it): claims and what backs them, the benchmark harness, the results index.

Claims and studies (tools/reproduce.py, tools/compare_methods.py, the multi-seed tools):

  claims.py         a claim: a registered experiment with its prediction stated first
  arm_runs.py       the arms of a comparison from one shared SFT warm start per seed
  seed_runs.py      one trainer run per seed, each in a process and workdir of its own
  seed_stats.py     summary statistics of a number over seeds
  paired_ci.py      the paired difference of two arms with a 95% t interval; the verdict
  claim_table.py    a claim record as a markdown table row
  results_index.py  RESULTS.md, one row per study and claim, read from their records

Benchmarks (bench/):

  stamp.py          the one machine stamp: commit, dirty flag, host, threads, load
  timing.py         timing one call: wall, CPU, load
  bench_record.py   the one record format: a program's results and its stamp
"""
