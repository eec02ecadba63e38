"""Entry point for spark-submit, which runs a Python *file*:

    $SPARK_HOME/bin/spark-submit --master spark://HOST:7077 [--py-files dist/rocketspec.zip] \
        rocketspec/commands/replay_submit.py PATH... [replay options]

is `rocketspec replay PATH...` on the master and configuration spark-submit gives
(docs/replay.md). It may be shipped alone: rocketspec itself comes from the driver's Python or
from --py-files."""
import os
import sys

# Python puts this file's folder first on sys.path; it holds modules of rocketspec.commands whose
# names a top-level import could take for another (profiles, schema): only the package is meant.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

from rocketspec.cli import main  # noqa: E402

if __name__ == "__main__":
    main(["replay", *sys.argv[1:]])
