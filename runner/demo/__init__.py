"""`benchfleet demo` in one place: its private Redis, local workers, the stand-in target and sweep."""
