"""The statistics a record may show: spans, the headline rule, adaptive repeats."""
