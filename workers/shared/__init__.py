"""The pieces the coordinator and the workers share: settings, Redis state, artifact stores,
queues, the recipe catalogue and the signing keys. runner/ imports these, never the rest of
workers/."""
