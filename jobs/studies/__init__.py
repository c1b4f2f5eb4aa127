"""Studies: each question a sweep can ask is one package here (its preset, verdict, answer and record sections)."""
