"""Reading the YAML a user hands fdp (plan files, replay configs): bounded, and numbers read as numbers.

Two things PyYAML's safe loader does not do for us:

* It reads YAML 1.1, where a float needs a decimal point and a signed exponent: ``1e-5`` and
  ``1e21`` are *strings* there (``1.0e-5`` is a float). Every README example and every hand-written
  plan writes ``delta: 1e-5``, so :class:`NumberLoader` adds the YAML 1.2 spelling of a float with
  an exponent (``1e-5``, ``2E+3``, ``.5e3``) as an implicit float. Integers and quoted strings are
  unchanged ('1e-5' in quotes stays text).
* Its cost grows with the text, so a 50 MB file held the CLI for 20 s before any check: files are
  regular files only (a pipe or a device would never end) and at most MAX_YAML_BYTES long, checked
  from the file's size before it is read (fdp_core/limits.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ..errors import ParameterError
from ..limits import MAX_YAML_BYTES, MAX_YAML_DEPTH
from .layouts import clean_text
from .loading import check_regular_file


# libyaml's parser when PyYAML was built with it (three times faster); the same safe constructors.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class NumberLoader(_SAFE_LOADER):
    """The safe loader that also reads 1e-5-style numbers (YAML 1.2 floats without a dot) as floats."""


_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
NumberLoader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789."))


def parse_yaml(text: str, what: str):
    """The YAML document in ``text`` (numbers as numbers); a one-line ParameterError otherwise."""
    if len(text.encode("utf-8", errors="replace")) > MAX_YAML_BYTES:
        raise ParameterError(f"the {what} is longer than {MAX_YAML_BYTES // 1024} KB, the limit for a {what} "
                             "(fdp_core/limits.py)")
    try:
        document = yaml.load(text, Loader=NumberLoader)  # noqa: S506 - a safe loader (SafeLoader or CSafeLoader) subclass
    except yaml.YAMLError as exc:
        raise ParameterError(f"{what} is not valid YAML: {clean_text(' '.join(str(exc).split()), 200)}") from None
    except RecursionError:  # PyYAML composes nested collections recursively: [[[[...]]]]
        document = None
    else:
        if _depth_above(document, MAX_YAML_DEPTH) is False:
            return document
    # libyaml composes [[[[...]]]] without recursing; the checks and writers after us would not.
    raise ParameterError(f"the {what} is nested too deeply to be an fdp {what} (more than {MAX_YAML_DEPTH} levels)")


def _depth_above(document, limit: int) -> bool:
    """Whether lists and mappings nest deeper than ``limit`` (an iterative walk: no recursion; a
    collection shared through YAML aliases is walked once, so an alias bomb costs its size, not 2^n)."""
    stack, seen = [(document, 0)], set()
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, (dict, list)):
            if id(node) in seen:
                continue
            seen.add(id(node))
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return False


def read_yaml_text(path: Path, what: str) -> str:
    """The text of a YAML file named by the user: a regular file, at most MAX_YAML_BYTES, UTF-8."""
    size = check_regular_file(Path(path), f"{what} file").st_size
    if size > MAX_YAML_BYTES:
        raise ParameterError(f"{clean_text(Path(path).name, 80)} is {size / 1024:,.0f} KB; the limit for a {what} "
                             f"is {MAX_YAML_BYTES // 1024} KB (fdp_core/limits.py)")
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParameterError(f"cannot read the {what} {clean_text(Path(path).name, 80)}: "
                             f"{clean_text(' '.join(str(exc).split()), 120)}") from None
