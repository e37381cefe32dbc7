"""Code generated from proto/mta/v1/*.proto by scripts/gen_proto.sh: do not edit."""
