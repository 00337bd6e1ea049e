"""Component benchmarks, each run from the repository root as `python -m bench.<name>`
(sampler, decode, rollout, update, sandbox, environments, memory, scaling, GPU, against
transformers and Tunix). Every one times calls with mtrl.evidence.timing and writes its
JSON through mtrl.evidence.bench_record (its results plus the one machine stamp);
records/ keeps the committed records, one folder per component. Not installed with mtrl.
"""
