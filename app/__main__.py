"""`python -m servlet.app` runs the `servlet` command line, like the installed `servlet` script."""

from servlet.app.cli import main

main()
