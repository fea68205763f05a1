"""The command line's global options, as kaudit reads them before click parses the rest (standard
library only: :mod:`pipelines.startup` reads the command line before numpy and pyarrow are
imported, for :mod:`pipelines.zookeeper.prefetch`). The options themselves are declared by the
CLI's global callback (:mod:`pipelines.cli`); a unit test holds these names to it."""

from __future__ import annotations

GLOBAL_FLAGS = ("--quiet", "--verbose", "--version")
GLOBAL_OPTIONS = ("--warehouse", "--run-id", "--spark-master", "--cluster", "--warehouse-format", "--catalog",
                  "--warehouse-local")  # each takes a value


def split_global_options(argv: list[str]) -> tuple[list[str], list[str]]:
    """``(the global options with their values, the rest)`` of ``argv``, wherever the global
    options are given (``kaudit report --run-id X``); nothing after ``--`` is an option."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i:]
            break
        if arg in GLOBAL_FLAGS:
            front.append(arg)
        elif arg.split("=", 1)[0] in GLOBAL_OPTIONS:
            take = 1 if "=" in arg else 2
            front += argv[i : i + take]
            i += take
            continue
        else:
            rest.append(arg)
        i += 1
    return front, rest


def hoist_global_options(argv: list[str]) -> list[str]:
    """``argv`` with the global options moved in front of the command, where click takes them."""
    front, rest = split_global_options(argv)
    return front + rest
