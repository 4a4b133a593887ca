"""`python -m mbert_lib <command> [<subcommand>] ...`; see `python -m mbert_lib --help`."""

import sys

from mbert_lib.cli import main

if __name__ == "__main__":
    sys.exit(main())
