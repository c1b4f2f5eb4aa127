"""Views of a record (Markdown, plots): they lay out what the record holds and never recompute it."""
