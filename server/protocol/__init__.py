"""The one place protobuf meets engine values (the generated code is the craits-protocol package)."""
