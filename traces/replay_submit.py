"""Entry point for spark-submit, which runs a Python *file*:

    $SPARK_HOME/bin/spark-submit --master spark://HOST:7077 traces/replay_submit.py PATH... [replay options]

is `rocketspec replay PATH...` in the session spark-submit made (docs/replay.md)."""
import sys

from rocketspec.cli import main

if __name__ == "__main__":
    main(["replay", *sys.argv[1:]])
