"""Same as `python -m mtrl.train`: absl flags over ml_collections config files."""

from mtrl.train import run

if __name__ == "__main__":
    run()
