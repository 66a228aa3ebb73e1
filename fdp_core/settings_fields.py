"""What a settings field is outside Python: its command-line option, its page control, its config key.

Each field of a settings dataclass (MeanSettings, KdeSettings, PcaSettings,
CovarianceSettings, RegressionSettings) carries an :class:`Option` in its metadata::

    epsilon: float = option(1.0, EPSILON, required=True)

and everything that used to repeat the fields by hand is generated from it: the argparse
options of the ``release`` commands, ``tradeoff`` and ``select`` (:func:`add_options`), the
settings built from parsed options (:func:`settings_from_args`), the "same release from the
command line" boxes of the pages (:func:`command_line`), the ``settings`` section of a
replayable ``config.yaml`` (:func:`config_of`, :func:`settings_from_config`) and the
session-state keys and defaults of the app's controls (:func:`page_keys`, :func:`page_defaults`,
:func:`page_settings`). A field renamed or added in the dataclass is renamed or added everywhere
at once.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import shlex
import typing
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .errors import ParameterError
from .kernels import KERNEL_NAMES
from .mechanisms.calibration import CALIBRATIONS
from .data.preprocess import load_reference, parse_value_range

METADATA_KEY = "option"


class _FieldDefault:
    def __repr__(self) -> str:
        return "FIELD_DEFAULT"


FIELD_DEFAULT = _FieldDefault()  # "the dataclass field's own default"


# The page families whose widgets hold settings fields. A family is the set of pages sharing
# the widgets: "mean" is drawn on the Mean and Trade-offs pages and committed on the Release
# page; "release" is the Release page's own density and components controls; "covariance" the
# Covariance & regression page (CovarianceSettings and RegressionSettings).
PAGES = ("mean", "density", "components", "covariance", "release")


@dataclass(frozen=True)
class Control:
    """A page widget holding a field: its page family, session-state key and how its value maps to the field's.

    ``default``: the widget's value before the user touches it, when the field's default is no
    widget value (None for a number input) or the page starts elsewhere. ``to_field`` /
    ``from_field`` convert between the two (e.g. a slider over log10 psi, a box typed as text);
    numbers are otherwise cast to the field's type.

    A field drawn on two page families has one Control for each (``KdeSettings.mechanism``: the
    Density page's ``density_mechanism`` and the Release page's ``rel_kde_mechanism``): the two
    widgets differ in more than their key (the Release page types the box as text and reads a
    bandwidth of 0 as "the default rule"), so a shared key prefix could not describe them.
    """

    page: str
    key: str
    default: Any = FIELD_DEFAULT
    to_field: Callable | None = None
    from_field: Callable | None = None

    def __post_init__(self):
        if self.page not in PAGES:
            raise ValueError(f"control {self.key!r}: unknown page family {self.page!r} (known: {', '.join(PAGES)})")


def log10_control(page: str, key: str) -> Control:
    """A slider over log10 of a positive field (penalties)."""
    return Control(page, key, to_field=lambda v: float(10 ** v), from_field=math.log10)


@dataclass(frozen=True)
class Option:
    """The command-line option (and page control) of one settings field.

    flag: ``--field-name`` unless given (``--M``, ``--B``, ``--bandwidth-from-data``).
    parse: text -> value for values argparse cannot type (ranges, boxes, files); runs in
        :func:`settings_from_args`, so a bad value is a one-line FdpError like any other.
    required: on the ``release`` command line; in a ``group``, one member of the group is.
    group: options of one group are mutually exclusive (``--tau`` / ``--tau-from-data``).
    cli_default: what the parser gives when the flag is absent, if not the field's default
        (``--tau``: None, the value range or the data decide).
    implied: the value a command derives from other fields when the flag is absent (PCA
        centring: public with a value range, else none); :func:`command_line` omits it.
    fields: one option setting several fields (``--value-range LO,HI`` -> lo, hi).
    spelled: values written with another option, as (value, command-line text) pairs.
    placeholder: the field is read from a file; command lines show this name instead.
    controls: the page widgets holding the field (:class:`Control`), at most one per page family.
    """

    help: str = ""
    flag: str | None = None
    parse: Callable | None = None
    choices: tuple | None = None
    metavar: str | None = None
    required: bool = False
    group: str | None = None
    cli_default: Any = FIELD_DEFAULT
    implied: Callable | None = None
    fields: tuple = ()
    spelled: tuple = ()
    placeholder: str | None = None
    controls: tuple = ()

    def flag_of(self, name: str) -> str:
        return self.flag or "--" + name.replace("_", "-")

    def dest_of(self, name: str) -> str:
        """argparse's dest: the field name, or the flag's for an option setting several fields."""
        return self.flag_of(name)[2:].replace("-", "_") if self.fields else name


def option(default, base: Option | None = None, **changes) -> dataclasses.Field:
    """A settings field with its option: ``rho: float = option(0.1, RHO, required=True)``."""
    opt = dataclasses.replace(base, **changes) if base is not None else Option(**changes)
    return dataclasses.field(default=default, metadata={METADATA_KEY: opt})


def number_list(flag: str) -> Callable[[str], tuple]:
    """The parse of a comma list of numbers given with ``flag``."""
    def parse(text: str) -> tuple:
        try:
            return tuple(float(x) for x in str(text).split(","))
        except ValueError:
            raise ParameterError(f"{flag} must be a comma list of numbers, got {text!r}") from None

    return parse


# --------------------------------------------------------------------------- options shared by several kinds

KERNEL = Option("covariance kernel (its eigenfunctions are the basis)", choices=KERNEL_NAMES)
RHO = Option("kernel range rho > 0 (grid rescaled to [0, 1])")
NU = Option("smoothness for --kernel matern")
ETA = Option("smoothness exponent eta >= 1")
EPSILON = Option("privacy loss epsilon > 0")
DELTA = Option("delta in (0, 1) (Gaussian mechanisms only)")
CALIBRATION = Option("Gaussian noise calibration: analytic (Balle & Wang 2018) or classical (epsilon <= 1)",
                     choices=CALIBRATIONS)
PERSON_COLUMN = Option("metadata column identifying the person behind each curve: a person's curves are clipped and "
                       "averaged into one, so the guarantee protects persons and n = number of persons (default: "
                       "every curve is a different person)", metavar="NAME")
VALUE_RANGE = Option("public range of every curve value in data units, declared without looking at the data (e.g. "
                     "0,1 for a fraction, 60,200 for heights in cm): values are clipped to it, curves centred at "
                     "(LO + HI)/2 (added back after the noise) and tau defaults to (HI - LO)/2. Write "
                     "--value-range=-5,40 when LO is negative", parse=parse_value_range, metavar="LO,HI")
REFERENCE = Option("public reference curve (CSV with columns t,value) to centre at instead of (LO + HI)/2; needs "
                   "--value-range", parse=load_reference, metavar="PATH", placeholder="REFERENCE_CSV")
N_PUBLIC = Option("declared public number of persons (default: the persons in the file, rows or distinct ids of "
                  "the person column, usable or not); persons without a usable curve count at the centre", metavar="N")
TAU = Option("public L2 norm bound (after centring); curves are clipped to it. Required without --value-range, "
             "which implies tau = (HI - LO)/2", group="tau", cli_default=None)
RAW_RELEASE = Option("publish the noised release as drawn: skip the free post-processing (a mean projected onto the "
                     "declared value range; a density clipped at 0 and rescaled to integrate to 1)",
                     flag="--no-post-processing")
TAU_FROM_DATA = Option("use the largest centred curve norm (data-dependent: the release is then NOT differentially "
                       "private)", group="tau")
# Covariance and regression: a public centre c, or a public range whose midpoint is the centre.
CENTRE = Option("public centre c subtracted from every curve (chosen without looking at the data)", group="centre",
                required=True)
CENTRE_RANGE = Option("public range LO,HI of every curve value: curves are clipped into it, centred at its midpoint, "
                      "and tau defaults to (HI - LO)/2. Write --value-range=-1,1 when LO < 0", flag="--value-range",
                      parse=parse_value_range, group="centre", required=True, fields=("lo", "hi"))


# --------------------------------------------------------------------------- numpydoc from the metadata

def _type_text(annotation) -> str:
    return str(annotation).replace("typing.", "").replace("NoneType", "None")


def documented_settings(cls):
    """Class decorator: a numpydoc ``Parameters`` section written from the fields' options.

    The option's help (the command line's) is the one description of a field, so the docstring,
    ``--help`` and the replay config never disagree. The section goes before an ``Examples``
    section when the class has one.
    """
    lines = ["Parameters", "----------"]
    for f in dataclasses.fields(cls):
        opt = f.metadata.get(METADATA_KEY)
        default = "" if f.default is dataclasses.MISSING else f", default {f.default!r}"
        lines.append(f"{f.name} : {_type_text(f.type)}{default}")
        words = (opt.help if opt is not None and opt.help else "") or "see the module's documentation"
        flag = f" (command line: ``{opt.flag_of(f.name)}``)" if opt is not None else ""
        lines.append(f"    {words}{flag}")
    section = "\n".join("    " + line for line in lines)  # the source's docstring indentation
    doc = (cls.__doc__ or cls.__name__).rstrip()
    head, sep, examples = doc.partition("\n    Examples\n    --------")
    cls.__doc__ = f"{head.rstrip()}\n\n{section}\n{sep}{examples}\n" if sep else f"{doc}\n\n{section}\n"
    return cls


# --------------------------------------------------------------------------- reading the metadata

def options_of(cls, names=None) -> list[tuple[str, Option]]:
    """(field name, option) of every field of ``cls`` with an option, in declaration order
    (or in the order of ``names``)."""
    found = {f.name: f.metadata[METADATA_KEY] for f in dataclasses.fields(cls) if METADATA_KEY in f.metadata}
    if names is None:
        return list(found.items())
    unknown = [n for n in names if n not in found]
    if unknown:
        raise KeyError(f"{cls.__name__} has no option for {', '.join(unknown)}")
    return [(n, found[n]) for n in names]


@functools.lru_cache(maxsize=None)
def _type_hints(cls) -> dict:
    """typing.get_type_hints, once per settings class: it re-evaluates every annotation string
    (~5 ms per call), and the pages ask for each field's type on every rerun."""
    return typing.get_type_hints(cls)


def _value_type(cls, name: str) -> type:
    """The field's type without None: float for ``float | None``."""
    hint = _type_hints(cls)[name]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if args else hint


def _field_default(cls, name: str):
    return next(f.default for f in dataclasses.fields(cls) if f.name == name)


def cli_default(cls, name: str, opt: Option):
    """The value the parser gives field ``name`` when its flag is absent (not required)."""
    if opt.fields:
        return None
    return _field_default(cls, name) if opt.cli_default is FIELD_DEFAULT else opt.cli_default


# --------------------------------------------------------------------------- argparse

def add_option(parser, name: str, opt: Option, *, value_type: type = str, default=None, required=False) -> None:
    """One option on ``parser`` (or on a mutually exclusive group)."""
    flag, dest = opt.flag_of(name), opt.dest_of(name)
    if value_type is bool:
        parser.add_argument(flag, dest=dest, action="store_true", help=opt.help)
        return
    kwargs = dict(dest=dest, default=default, help=opt.help, choices=opt.choices, metavar=opt.metavar)
    if value_type in (int, float) and opt.parse is None:
        kwargs["type"] = value_type
    if required:
        kwargs["required"] = True
    parser.add_argument(flag, **kwargs)


def add_options(parser, cls, *, fields=None, required=None, overrides: Mapping | None = None) -> None:
    """The argparse options of ``cls``'s fields (all, or ``fields`` in that order).

    ``required``: the fields this command requires (default: those the metadata marks);
    ``overrides``: {field: {attribute: value}} changes for this command (choices, help).
    An option's default is the field's (or its ``cli_default``); a required one has none.
    """
    chosen = [(name, dataclasses.replace(opt, **(overrides or {}).get(name, {})))
              for name, opt in options_of(cls, fields)]
    needed = {name for name, opt in chosen if (opt.required if required is None else name in required)}
    members: dict[str, list[str]] = {}
    for name, opt in chosen:
        if opt.group:
            members.setdefault(opt.group, []).append(name)
    groups = {g: parser.add_mutually_exclusive_group(required=any(n in needed for n in names))
              for g, names in members.items() if len(names) > 1}
    for name, opt in chosen:
        target = groups.get(opt.group, parser)
        alone = target is parser and name in needed
        add_option(target, name, opt, value_type=_value_type(cls, name), required=alone,
                   default=None if name in needed else cli_default(cls, name, opt))


def settings_from_args(cls, args, *, fields=None, **extra):
    """A ``cls`` from parsed options: every option of ``fields`` (default: all ``cls``'s
    options present in ``args``) parsed, ``extra`` fields given as they are, the rest default."""
    parsed = vars(args)
    values = {}
    for name, opt in options_of(cls, fields):
        dest = opt.dest_of(name)
        if name in extra or dest not in parsed:
            continue
        value = parsed[dest]
        if value is not None and opt.parse is not None:
            value = opt.parse(value)
        if opt.fields:
            values.update(zip(opt.fields, (None,) * len(opt.fields) if value is None else value))
        else:
            values[name] = value
    settings = cls(**values, **extra)
    if "tau" in values and "tau_from_data" in {f.name for f in dataclasses.fields(cls)} and values["tau"] is None \
            and getattr(settings, "value_range", None) is None and not getattr(settings, "tau_from_data", False):
        # The command line never falls back to Python's unit ball (params.default_l2_clip): the norm
        # bound stays undeclared, and validation refuses it where the release needs one, as it always has.
        object.__setattr__(settings, "tau", None)
    return settings


# --------------------------------------------------------------------------- command lines

def _text(value) -> str:
    """A value as the parser reads it back: numbers by repr (round trip), lists joined by ','."""
    if isinstance(value, (tuple, list)):
        return ",".join(_text(v) for v in value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    return str(value)


def _argument(settings, name: str, opt: Option) -> str | None:
    """``--flag value`` for one field, or None when the command line gives that value without it."""
    flag = opt.flag_of(name)
    value = tuple(getattr(settings, f) for f in opt.fields) if opt.fields else getattr(settings, name)
    if opt.implied is not None:
        absent = opt.implied(settings)
    else:
        absent = (None,) * len(opt.fields) if opt.fields else cli_default(type(settings), name, opt)
    if value == absent and not (opt.required and not opt.group):
        return None
    spelled = dict(opt.spelled)
    if isinstance(value, str) and value in spelled:
        return spelled[value]
    if isinstance(value, bool):
        if value:
            return flag
        raise ParameterError(f"{name} = False has no command-line spelling")
    if value is None or (opt.fields and None in value):
        raise ParameterError(f"{name} = None has no command-line spelling (the command line's default is "
                             f"{absent!r})")
    if opt.choices is not None and value not in opt.choices:
        raise ParameterError(f"{name} = {value!r} has no command-line spelling (choices: "
                             f"{', '.join(map(str, opt.choices))})")
    if opt.placeholder:
        return f"{flag} {opt.placeholder}"
    if isinstance(value, (tuple, list)):  # '=': a list may start with '-'
        return shlex.quote(f"{flag}={_text(value)}")
    return f"{flag} {shlex.quote(_text(value))}"


def _switched_on(settings, options) -> set[str]:
    """Groups with a switch on (``--tau-from-data``): their other members are then not written,
    because the command computes that value instead of reading it."""
    return {opt.group for name, opt in options
            if opt.group and _value_type(type(settings), name) is bool and getattr(settings, name)}


def command_line(command: str, settings, *, inputs=(), out: str = "OUT_DIR") -> str:
    """``python -m fdp_core <command> <inputs> <options> --out OUT_DIR`` that gives ``settings`` back.

    ``inputs``: (flag, value) pairs written first (``--data FILE``, ``--feature SPEC``). Only
    options whose value differs from what the command would take without them are written.
    Raises ParameterError for settings the command line cannot express.
    """
    options = options_of(type(settings))
    switched = _switched_on(settings, options)
    parts = ["python -m fdp_core", command] + [f"{flag} {shlex.quote(str(value))}" for flag, value in inputs]
    for name, opt in options:
        if opt.group in switched and _value_type(type(settings), name) is not bool:
            continue
        text = _argument(settings, name, opt)
        if text is not None:
            parts.append(text)
    return " ".join(parts + [f"--out {out}"])


# --------------------------------------------------------------------------- replay configs

def _plain(value):
    return [_plain(v) for v in value] if isinstance(value, (tuple, list)) else value


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, (tuple, list)) else value


def config_of(settings) -> dict:
    """The ``settings`` section of a replayable config: every field, tuples as lists."""
    return {f.name: _plain(getattr(settings, f.name)) for f in dataclasses.fields(settings)}


def settings_from_config(cls, mapping: Mapping):
    """A ``cls`` from a config's ``settings`` section (not validated: the caller does that).

    YAML gives lists where the frozen settings hold tuples; they are turned back. Unknown
    keys and a scalar where a list belongs raise ParameterError naming them.
    """
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(str(key) for key in mapping if key not in names)
    if unknown:
        raise ParameterError(f"unknown setting(s) {', '.join(unknown)} (known: {', '.join(names)})")
    values = {}
    for name, value in mapping.items():
        if value is not None and _value_type(cls, name) is tuple:
            if not isinstance(value, (list, tuple)):
                raise ParameterError(f"settings.{name} must be a list, got {value!r}")
            value = _tuples(value)
        values[name] = value
    return cls(**values)


# --------------------------------------------------------------------------- page controls

def _controls(cls, page: str) -> list[tuple[str, Control]]:
    """(field, control) of the fields a widget of ``page`` holds; a page without any is an error
    (a misspelt family would otherwise find no control and check nothing)."""
    found = [(name, c) for name, opt in options_of(cls) for c in opt.controls if c.page == page]
    if not found:
        raise KeyError(f"{cls.__name__} has no page control on page family {page!r}")
    names = [name for name, _ in found]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"{cls.__name__}.{', '.join(twice)} has two controls on page family {page!r}")
    return found


def page_keys(cls, page: str) -> dict[str, str]:
    """{field: session-state key} of the fields a control of ``page`` holds."""
    return {name: control.key for name, control in _controls(cls, page)}


def page_defaults(cls, page: str) -> dict:
    """{session-state key: the control's value before the user touches it}, from the field defaults."""
    defaults = {}
    for name, control in _controls(cls, page):
        value = _field_default(cls, name) if control.default is FIELD_DEFAULT else control.default
        defaults[control.key] = control.from_field(value) if control.from_field and value is not None else value
    return defaults


def page_values(cls, page: str, state: Mapping, *, skip=()) -> dict:
    """{field: value} of the controls of ``page`` (but those of the fields in ``skip``), from ``state``.

    Every control's key must be in ``state`` (pages seed them with :func:`page_defaults`): a
    missing one means a page uses a key the metadata does not know, and a release built from
    defaults instead of the user's choice must not go unnoticed.
    """
    values = {}
    for name, control in _controls(cls, page):
        if name in skip:
            continue
        if control.key not in state:
            raise KeyError(f"page control '{control.key}' ({cls.__name__}.{name}) has no value in the session: was "
                           "its key renamed on the page?")
        value = state[control.key]
        if control.to_field is not None:
            value = control.to_field(value)
        elif value is not None and _value_type(cls, name) in (int, float):
            value = _value_type(cls, name)(value)
        values[name] = value
    return values


def page_settings(cls, page: str, state: Mapping, **given):
    """A ``cls`` from the values of the controls of ``page`` in ``state`` and the ``given`` fields
    (which win: a value the page derives from several widgets, or from the sidebar)."""
    return cls(**page_values(cls, page, state, skip=given), **given)
