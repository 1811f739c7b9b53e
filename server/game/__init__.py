"""One game: seats and clocks, policies, and the referee loop that plays it (no gRPC here)."""
