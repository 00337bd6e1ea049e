"""`python -m mtrl.envs.sandbox --program FILE --tests FILE [--entry-point NAME]`."""

import sys

from mtrl.envs.sandbox.cli import main

sys.exit(main())
