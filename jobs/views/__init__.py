"""Views of a record (Markdown, plots): they lay out what the record holds, never recompute it."""
