"""What runs on a lab host (the Celery app and its one task), and the fleet's shared edges:
the Redis state, the artifact store and the settings, which the coordinator uses too."""
