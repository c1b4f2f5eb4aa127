"""The base every spec model shares: strict, so an unknown or misspelt key is an error."""

from pydantic import BaseModel, ConfigDict

# Values a recipe parameter may take in YAML.
Scalar = bool | int | float | str


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
