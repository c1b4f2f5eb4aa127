"""Studies: each question a sweep can ask is one package here, holding its preset, its question,
its verdict and answer, and its sections of the record."""
