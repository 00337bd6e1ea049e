"""Launch `python -m mtrl.train` on a Cloud TPU pod slice or on GPU hosts.

    # TPU pod slice (big_vision-style gcloud commands; every host runs the same
    # command, jax.distributed finds the coordinator itself):
    python -m tools.launch tpu --name mtrl-v5e --zone us-west4-a \\
        --accelerator v5litepod-16 --workdir gs://BUCKET/runs/exp1 \\
        --config experiments/configs/default.py -- --config.mesh.shape=4,4,1 --dry-run

    # N GPUs: one host (one process sees every GPU) or several (one process per host,
    # joined with explicit --coordinator_address / --num_processes / --process_id):
    python -m tools.launch gpu --hosts gpu-a,gpu-b --workdir /shared/runs/exp1 \\
        -- --config.mesh.shape=2,8,1 --dry-run

Without --dry-run the commands run in order (each must succeed; the per-host GPU
commands run concurrently, since they join one cluster). --dry-run prints them,
one per line, exactly as they would run. Arguments after `--` go to mtrl.train.

Why gcloud commands and not a scheduler: a JAX job on a TPU pod is one identical
command on every host (`--worker=all`), which `gcloud compute tpus tpu-vm ssh` does
with nothing else installed; big_vision and most JAX research code launch this way.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from typing import Sequence

REPO_DIR = "~/mtrl"  # where the code lives on every remote host
VENV = ".venv"  # the environment the setup step installs, inside REPO_DIR
ACTIVATE = f". {VENV}/bin/activate"
# What a worker needs to install and run mtrl: never the local virtualenv, models/,
# workdirs or tests (the whole checkout with its .venv was 2.5 GB per worker).
WORKER_FILES = ("setup.py", "mtrl", "experiments")
DEFAULT_TPU_VERSION = "v2-alpha-tpuv5-lite"
DEFAULT_PORT = 12345


def train_command(config: str, workdir: str, extra: Sequence[str], *,
                  distributed: Sequence[str] = ()) -> str:
    """The mtrl.train command line (one shell string)."""
    args = ["python", "-m", "mtrl.train", f"--config={config}", f"--workdir={workdir}",
            "--progress=false", *distributed, *extra]
    return " ".join(shlex.quote(a) for a in args)


def tpu_commands(name: str, zone: str, accelerator: str, config: str, workdir: str,
                 extra: Sequence[str], *, version: str = DEFAULT_TPU_VERSION,
                 project: str = "", create: bool = True, repo: str = ".") -> list[str]:
    """gcloud commands: create the TPU VM slice, pack WORKER_FILES into a tarball and
    copy it to every host, install into REPO_DIR/.venv, then run the same training
    command on every host (--distributed_auto) inside that environment."""
    where = [f"--zone={zone}"] + ([f"--project={project}"] if project else [])
    flags = " ".join(shlex.quote(w) for w in where)
    out = []
    if create:
        out.append(f"gcloud compute tpus tpu-vm create {shlex.quote(name)} {flags} "
                   f"--accelerator-type={shlex.quote(accelerator)} "
                   f"--version={shlex.quote(version)}")
    tarball = f"/tmp/mtrl-{name}.tgz"
    out.append(f"tar czf {shlex.quote(tarball)} --exclude=__pycache__ -C {shlex.quote(repo)} "
               + " ".join(WORKER_FILES))
    out.append(f"gcloud compute tpus tpu-vm scp {shlex.quote(tarball)} "
               f"{shlex.quote(name)}:~/mtrl.tgz --worker=all {flags}")
    setup = (f"mkdir -p {REPO_DIR} && tar xzf ~/mtrl.tgz -C {REPO_DIR} && cd {REPO_DIR} && "
             f"python3 -m venv {VENV} && {ACTIVATE} && pip install -e . 'jax[tpu]'")
    run = (f"cd {REPO_DIR} && {ACTIVATE} && "
           + train_command(config, workdir, extra, distributed=["--distributed_auto"]))
    for remote in (setup, run):
        out.append(f"gcloud compute tpus tpu-vm ssh {shlex.quote(name)} {flags} "
                   f"--worker=all --command={shlex.quote(remote)}")
    return out


def gpu_commands(hosts: Sequence[str], config: str, workdir: str, extra: Sequence[str], *,
                 port: int = DEFAULT_PORT) -> list[str]:
    """One host: the training command itself (one process drives all its GPUs), in
    the caller's environment. Several: one ssh command per host (host 0 is the
    coordinator), each in REPO_DIR/.venv there (`pip install -e .` into it first)."""
    hosts = list(hosts)
    if not hosts:
        raise ValueError("--hosts: need at least one host")
    if len(hosts) == 1 and hosts[0] in ("", "localhost"):
        return [train_command(config, workdir, extra)]
    out = []
    for index, host in enumerate(hosts):
        distributed = [f"--coordinator_address={hosts[0]}:{port}",
                       f"--num_processes={len(hosts)}", f"--process_id={index}"]
        remote = f"cd {REPO_DIR} && {ACTIVATE} && " + train_command(
            config, workdir, extra, distributed=distributed)
        out.append(f"ssh {shlex.quote(host)} {shlex.quote(remote)}")
    return out


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    argv = list(argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="target", required=True)
    for target in ("tpu", "gpu"):
        p = sub.add_parser(target)
        p.add_argument("--config", default="experiments/configs/default.py")
        p.add_argument("--workdir", required=True)
        p.add_argument("--dry-run", action="store_true")
        if target == "tpu":
            p.add_argument("--name", required=True)
            p.add_argument("--zone", required=True)
            p.add_argument("--accelerator", required=True, help="e.g. v5litepod-16, v4-32")
            p.add_argument("--version", default=DEFAULT_TPU_VERSION)
            p.add_argument("--project", default="")
            p.add_argument("--no-create", action="store_true",
                           help="the slice exists: copy, install and run only")
        else:
            p.add_argument("--hosts", default="localhost",
                           help="comma-separated hosts, the first is the coordinator")
            p.add_argument("--port", type=int, default=DEFAULT_PORT)
    # "--dry-run" may also follow "--" by habit; it is never a trainer flag.
    if "--dry-run" in extra:
        extra.remove("--dry-run")
        own.append("--dry-run")
    return parser.parse_args(own), extra


def commands(args: argparse.Namespace, extra: Sequence[str]) -> list[str]:
    if args.target == "tpu":
        return tpu_commands(args.name, args.zone, args.accelerator, args.config, args.workdir,
                            extra, version=args.version, project=args.project,
                            create=not args.no_create)
    return gpu_commands(args.hosts.split(","), args.config, args.workdir, extra,
                        port=args.port)


def main(argv: Sequence[str] | None = None) -> int:
    args, extra = parse(sys.argv[1:] if argv is None else argv)
    try:
        lines = commands(args, extra)
    except ValueError as e:
        sys.exit(f"error: {e}")
    if args.dry_run:
        print("\n".join(lines))
        return 0
    return run_commands(args.target, lines)


def run_commands(target: str, lines: Sequence[str], **popen) -> int:
    """Runs the commands of `commands`: in order, stopping at the first failure; the
    per-host commands of a multi-host GPU run at once (they join one cluster)."""
    if target == "gpu" and len(lines) > 1:
        procs = [subprocess.Popen(line, shell=True, **popen) for line in lines]
        return max(p.wait() for p in procs)
    for line in lines:
        code = subprocess.call(line, shell=True, **popen)
        if code:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
