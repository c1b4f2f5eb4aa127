"""`benchfleet demo` in one place: its private Redis, local workers, stand-in target and sweep."""
