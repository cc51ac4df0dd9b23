"""Command-line tools of the library (no Luigi here): the `lmbr` toolbox and its subcommands."""
