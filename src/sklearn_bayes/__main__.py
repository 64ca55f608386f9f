"""Command line: ``python -m sklearn_bayes {demo,reproduce} ...``."""

from sklearn_bayes._cli import main

if __name__ == "__main__":
    raise SystemExit(main())
