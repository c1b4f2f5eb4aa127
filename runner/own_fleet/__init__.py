"""`benchfleet fleet up|down|status`: a fleet kept running on this machine for the user's own
repositories and models (a Redis, the keys, workers under the pidfile supervisor)."""
