"""One module per `benchfleet` subcommand, each defining `command` (a click command) over runner/;
runner/cli.py imports a module only when its subcommand is called."""
