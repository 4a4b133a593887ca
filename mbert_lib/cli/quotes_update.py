"""`python -m mbert_lib quotes update`: rewrite every quoted number from its record."""

HELP = "rewrite every number quoted in README.md, COURSE.md and docs/ from its record"


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    # on use: building the parser (--help) must not load what the commands need
    from mbert_lib.report.quotes import update

    print(f"{update()} quoted number(s) rewritten from their records")
    return 0
