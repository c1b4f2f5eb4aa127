"""The edges of history: the SQLite index built from the artifact store, importers, git order."""
