"""``python -m fdp_core ...``: scripted releases and sweeps.

Commands live one per module in :mod:`fdp_core.commands`; each module defines
``PATH`` (the subcommand words, e.g. ("release", "mean")), ``HELP``, ``configure(parser)``
and ``run(args) -> int``. Any :class:`FdpError` becomes a one-line message on stderr and
exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys

from . import commands
from .errors import FdpError

EXIT_BAD_INPUT = 2


_LONG_WORD = re.compile(r"\S{201,}")


def one_line(message) -> str:
    """A message as the one line the CLI prints: whitespace collapsed, and any word over 200
    characters (a 100,000-character argument echoed back) cut to its start and length."""
    text = " ".join(str(message).split())
    return _LONG_WORD.sub(lambda m: f"{m.group()[:80]}... ({len(m.group()):,} characters)", text)


class _Parser(argparse.ArgumentParser):
    """argparse prints usage + message and exits 2; keep it to one line."""

    def error(self, message):
        sys.stderr.write(f"error: {one_line(message)} (see --help)\n")
        raise SystemExit(EXIT_BAD_INPUT)


def _command_modules():
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            module = importlib.import_module(f"{commands.__name__}.{info.name}")
            if hasattr(module, "PATH"):
                yield module


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m fdp_core", description="Differentially private release of functional data.")
    groups: dict[tuple, argparse._SubParsersAction] = {(): parser.add_subparsers(dest="command", required=True,
                                                                                 parser_class=_Parser)}
    parsers: dict[tuple, argparse.ArgumentParser] = {}
    for module in _command_modules():
        path = tuple(module.PATH)
        for depth in range(1, len(path)):
            prefix = path[:depth]
            if prefix not in groups:
                sub = groups[prefix[:-1]].add_parser(prefix[-1], help=f"{prefix[-1]} commands")
                parsers[prefix] = sub
                groups[prefix] = sub.add_subparsers(dest="_".join(prefix), required=True, parser_class=_Parser)
        leaf = groups[path[:-1]].add_parser(path[-1], help=module.HELP, description=module.HELP)
        module.configure(leaf)
        leaf.set_defaults(_run=module.run)
    return parser


_NEGATIVE_LIST = re.compile(r"^-[\d.][\d.eE+-]*(,[-\d.eE+]+)+$")


def _attach_negative_lists(argv: list[str]) -> list[str]:
    """``--box -1,2`` -> ``--box=-1,2``: argparse takes a value that starts with '-' and is
    not a plain number for an option name, so comma lists of negative numbers need this."""
    out: list[str] = []
    for arg in argv:
        if out and _NEGATIVE_LIST.match(arg) and out[-1].startswith("--") and "=" not in out[-1]:
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(_attach_negative_lists(argv))
    try:
        return int(args._run(args) or 0)
    except FdpError as exc:
        sys.stderr.write(f"error: {one_line(exc)}\n")
        return EXIT_BAD_INPUT
    except OSError as exc:
        detail = f"{exc.strerror or exc}: {getattr(exc, 'filename', '')}"
        sys.stderr.write(f"error: {one_line(detail)}\n")
        return EXIT_BAD_INPUT
