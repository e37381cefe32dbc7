#!/usr/bin/env bash
# Regenerates mta/v1/*_pb2*.py from proto/mta/v1/*.proto (commit the result;
# tests/test_proto.py fails when they are stale). Needs grpcio-tools (the test extra).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m grpc_tools.protoc -I proto --python_out=. --pyi_out=. --grpc_python_out=. proto/mta/v1/*.proto
