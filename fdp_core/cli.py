"""``python -m fdp_core ...``: scripted releases and sweeps.

Commands live one per module in :mod:`fdp_core.commands`; each module defines
``PATH`` (the subcommand words, e.g. ("release", "mean")), ``HELP``, ``configure(parser)``
and ``run(args) -> int``. Any :class:`FdpError` becomes a one-line message on stderr and
exit status 2, never a traceback.

A run imports only the command it runs: the command tree (names and one-line helps) is read
from the modules' source text, and a command's module is imported, and its options added,
when argparse reaches that command. Importing all of them (and with them scipy.stats,
pandas, the mechanisms) cost ~2 s before ``--help`` could print.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import re
import sys
from pathlib import Path

from . import commands
from .errors import FdpError, missing_extra

EXIT_BAD_INPUT = 2


_LONG_WORD = re.compile(r"\S{201,}")


def one_line(message) -> str:
    """A message as the one line the CLI prints: whitespace collapsed, and any word over 200
    characters (a 100,000-character argument echoed back) cut to its start and length."""
    text = " ".join(str(message).split())
    return _LONG_WORD.sub(lambda m: f"{m.group()[:80]}... ({len(m.group()):,} characters)", text)


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` (COLUMNS, else the terminal's width, else 80), without
    importing shutil: argparse imports it (and with it bz2 and lzma, ~3 ms) for the first formatter."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter with the width argparse would take (the terminal's, less 2)."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        super().__init__(prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    """argparse prints usage + message and exits 2; keep it to one line.

    A command's parser may be created before its options: ``pending_module`` then names the
    module whose ``configure`` adds them the first time the parser parses or prints help.
    """

    pending_module: str | None = None

    def __init__(self, *args, formatter_class=_Formatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)

    def ensure_configured(self) -> None:
        if self.pending_module is not None:
            module = importlib.import_module(self.pending_module)
            self.pending_module = None
            _configure_leaf(self, module)

    def parse_known_args(self, args=None, namespace=None):
        self.ensure_configured()
        return super().parse_known_args(args, namespace)

    def format_usage(self):
        self.ensure_configured()
        return super().format_usage()

    def format_help(self):
        self.ensure_configured()
        return super().format_help()

    def error(self, message):
        sys.stderr.write(f"error: {one_line(message)} (see --help)\n")
        raise SystemExit(EXIT_BAD_INPUT)


def _configure_leaf(leaf: argparse.ArgumentParser, module) -> None:
    module.configure(leaf)
    leaf.set_defaults(_run=module.run)


_NOT_LITERAL = object()


_FIRST_DEF = re.compile(r"^(?:def |class |async def |@)", re.M)


def _head_statements(source: str, names: tuple[str, ...]) -> list:
    """The module's top-level statements that can assign ``names``: those before its first top-level
    def/class (PATH and HELP sit there) when nothing after it could assign them, else all of them.
    Parsing every command module whole cost ~12 ms of each command's CPU (issue 42)."""
    first = _FIRST_DEF.search(source)
    if first is not None:
        rest = source[first.start():]
        if not re.search(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b\s*(?:[^\s=]\S*\s*)?=(?!=)", rest):
            try:
                return ast.parse(source[:first.start()]).body
            except SyntaxError:  # the cut fell inside a string: parse it all
                pass
    return ast.parse(source).body


def _top_level_assignments(source: str, names: tuple[str, ...]) -> dict:
    """Top-level ``NAME = <literal>`` assignments of a module's source (without running it);
    a name assigned something else maps to ``_NOT_LITERAL``."""
    found = {}
    for node in _head_statements(source, names):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in names):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:  # built from other names: only importing the module tells
                found[node.targets[0].id] = _NOT_LITERAL
    return found


def _command_table() -> list[tuple[str, tuple, str]]:
    """(module name, PATH, HELP) of every command module, sorted by module name.

    Read from the source text, so that listing the commands imports none of them; a module
    whose PATH or HELP is not a plain literal is imported to read them. Modules without a
    PATH (shared helpers) are not commands.
    """
    table = []
    import pkgutil  # lazy: ~2 ms of import; a run that names its command reads one module (_named_command)

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        name = f"{commands.__name__}.{info.name}"
        source = Path(info.module_finder.path, f"{info.name}.py")
        found = (_top_level_assignments(source.read_text("utf-8"), ("PATH", "HELP")) if source.is_file()
                 else {"PATH": _NOT_LITERAL})
        if "PATH" not in found:
            continue
        if found["PATH"] is _NOT_LITERAL or found.get("HELP", _NOT_LITERAL) is _NOT_LITERAL:
            module = importlib.import_module(name)
            if not hasattr(module, "PATH"):
                continue
            found = {"PATH": module.PATH, "HELP": module.HELP}
        table.append((name, tuple(found["PATH"]), found["HELP"]))
    return table


def _named_command(argv: list[str]) -> tuple[str, tuple, str] | None:
    """(module name, PATH, HELP) of the command ``argv`` starts with, found from its words alone
    (``release kde-counts`` -> commands/release_kde_counts.py) when that module declares exactly
    that PATH; None otherwise (the whole table is then read). A run then reads one command's source
    and builds one branch of the tree: parsing every command module's head and creating a parser for
    each (argparse looks up its translations on disk for every parser) cost ~10 ms (issue 42)."""
    folder = Path(next(iter(commands.__path__)))
    for depth in (3, 2, 1):
        words = argv[:depth]
        if len(words) < depth or any(not word or word.startswith("-") for word in words):
            continue
        stem = "_".join(words).replace("-", "_")
        source = folder / f"{stem}.py"
        if not stem.isidentifier() or stem.startswith("_") or not source.is_file():
            continue
        found = _top_level_assignments(source.read_text("utf-8"), ("PATH", "HELP"))
        path, help_text = found.get("PATH"), found.get("HELP")
        if isinstance(path, (tuple, list)) and tuple(path) == tuple(words) and isinstance(help_text, str):
            return f"{commands.__name__}.{stem}", tuple(path), help_text
    return None


def _command_modules():
    for name, _, _ in _command_table():
        yield importlib.import_module(name)


def build_parser(lazy: bool = False, argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole command tree. ``lazy``: add a command's options (importing its module) only
    when that command is parsed or its help printed, as ``main`` does; the default builds
    every command now (for code that inspects the parsers). ``argv``: when it starts with a
    command's words, only that command's branch (the same parsers, prog names and messages for
    that command line; anything else, a group's --help or a typo, gets the whole tree)."""
    parser = _Parser(prog="python -m fdp_core", description="Differentially private release of functional data.")
    groups: dict[tuple, argparse._SubParsersAction] = {(): parser.add_subparsers(dest="command", required=True,
                                                                                 parser_class=_Parser)}
    parsers: dict[tuple, argparse.ArgumentParser] = {}
    named = None if argv is None else _named_command(argv)
    for module_name, path, help_text in ([named] if named is not None else _command_table()):
        for depth in range(1, len(path)):
            prefix = path[:depth]
            if prefix not in groups:
                sub = groups[prefix[:-1]].add_parser(prefix[-1], help=f"{prefix[-1]} commands")
                parsers[prefix] = sub
                groups[prefix] = sub.add_subparsers(dest="_".join(prefix), required=True, parser_class=_Parser)
        leaf = groups[path[:-1]].add_parser(path[-1], help=help_text, description=help_text)
        leaf.pending_module = module_name
        if not lazy:
            leaf.ensure_configured()
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
    try:
        # Parsing imports the chosen command's module: in the light install it may need an extra.
        argv = _attach_negative_lists(argv)
        args = build_parser(lazy=True, argv=argv).parse_args(argv)
        return int(args._run(args) or 0)
    except FdpError as exc:
        sys.stderr.write(f"error: {one_line(exc)}\n")
        return EXIT_BAD_INPUT
    except ModuleNotFoundError as exc:  # the light install: name the extra that brings the package
        error = missing_extra(exc, f"'{' '.join(argv[:2])}'")
        if error is None:
            raise
        sys.stderr.write(f"error: {one_line(error)}\n")
        return EXIT_BAD_INPUT
    except OSError as exc:
        detail = f"{exc.strerror or exc}: {getattr(exc, 'filename', '')}"
        sys.stderr.write(f"error: {one_line(detail)}\n")
        return EXIT_BAD_INPUT
