"""`python -m mbert_lib quotes check`: every quoted number against its record."""

HELP = (
    "check that every number quoted in README.md, COURSE.md and docs/ (<!--n record path "
    "format-->...<!--/n-->) reads what its record gives; exit 1 listing those that do not"
)


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    # on use: building the parser (--help) must not load what the commands need
    from mbert_lib.report.quotes import check

    problems = check()
    for line in problems:
        print(line)
    print(f"{len(problems)} quoted number(s) differ from their records" if problems else "ok")
    return 1 if problems else 0
