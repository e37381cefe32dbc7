"""The gRPC aggregation server: registry of monoids and policies (more to come: servicer, server)."""
