"""The record: attempts combined once into one typed model, its flags, raw data and its checker."""
