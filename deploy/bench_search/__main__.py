"""`python deploy/bench_search ARGS` (or `python -m bench_search` with deploy/ on the path):
the benchmark's command line, runner.main."""
import os
import sys

if __package__ in (None, ""):
    # Run as a directory: make deploy/ importable so the package's relative imports work.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_search.runner import main  # noqa: E402

sys.exit(main())
