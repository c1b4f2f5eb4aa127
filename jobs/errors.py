"""Errors a user can cause and fix; the CLI prints them as sentences, never as tracebacks."""


class UserError(Exception):
    """A mistake in the user's input or setup, with a message that says what to do."""


class SpecError(UserError):
    """A sweep or catalogue file with one or more problems, one sentence each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))
