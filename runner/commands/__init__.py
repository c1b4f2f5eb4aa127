"""One module per `benchfleet` subcommand: `add(sub)` declares it, `run(args, ...)` does it."""
