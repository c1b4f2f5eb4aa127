"""benchfleet's domain: sweeps, recipes, cells, parsers, statistics and records.

Pure data and functions: nothing here talks to Redis, Celery, a subprocess or the clock.
"""
