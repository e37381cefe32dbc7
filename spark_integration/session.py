"""A local Spark session configured for the operator (tests, the example job, benchmarks)."""

from __future__ import annotations

import os
import sys
from typing import Any

#: transformWithStateInPandas needs RocksDB state (the default provider refuses it).
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def local_session(name: str = "mta", cores: int | str = "*", shuffle_partitions: int = 4,
                  conf: dict[str, str] | None = None) -> Any:
    """``local[cores]`` with RocksDB state, UTC session time, no UI, small shuffles.

    Workers run this interpreter (``PYSPARK_PYTHON``), so they import the same mta."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.appName(name).master(f"local[{cores}]")
               .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
