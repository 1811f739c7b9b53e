"""craits.v1: generated from proto/craits/v1/referee.proto; do not edit the _pb2 files."""
