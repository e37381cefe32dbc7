"""Scripts that reproduce the MTA paper's experiments (run from the repository root).

    python -m benchmarks.exp1_constant_window      # Experiment 1: constant-size window
    python -m benchmarks.exp2_bulk_eviction        # Experiment 2: bulk eviction latency
    python -m benchmarks.table2_stream_analytics   # Experiment 3 / Table 2: telemetry stream

Each takes ``--quick`` (a smoke run of a few seconds) and ``--out DIR`` (default
``benchmarks/results``) and writes ``NAME.json`` (raw results and machine info),
``NAME.csv`` and ``NAME.png``; the markdown tables go to stdout.
"""
