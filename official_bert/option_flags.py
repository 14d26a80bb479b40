"""absl flags made from the fields of an options dataclass, and read back into one.

An options dataclass (training.training_options.TrainingOptions and the task options built on it)
is the single place a setting is written: its field's name is the flag's name, its default the
flag's default, and `option(help=...)` gives the help text. A script defines the flags of the
options it runs with `define_option_flags(Options)` and, after absl has parsed the command line,
builds them with `options_from_flags(Options)`. Fields made with `option(flag=False)` (or plain
`dataclasses.field`s and fields without a help text) are not flags: values the library computes
or that only Python callers pass.

Written here rather than with absl's `flags.DEFINE_*` per script because several scripts share
most settings; before, each setting was spelled out four times (flag, dict, dataclass, runner
settings) and some never reached the scripts that needed them.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Sequence

from absl import flags

# The flags this module defines belong to the script that asked for them (they are its key
# flags: --helpshort lists them), not to this module.
flags.disclaim_key_flags()

_HELP = "official_bert.help"
_CHOICES = "official_bert.choices"
_FLAG = "official_bert.flag"


def option(
    default=dataclasses.MISSING,
    *,
    help: str | None = None,  # noqa: A002  (absl's word for it)
    choices: Sequence[str] | None = None,
    flag: bool = True,
    default_factory=dataclasses.MISSING,
):
    """A dataclass field that is also a command-line flag (unless flag=False).

    help: the flag's help text (required for a flag). choices: the allowed values of a string
    flag (an absl enum flag). Without a default the field is required in Python; as a flag its
    default is None and the script marks it required (or the options' own checks name it).
    """
    if flag and not help:
        raise ValueError("an option that is a flag needs a help text")
    metadata = {_HELP: help, _CHOICES: tuple(choices) if choices else None, _FLAG: flag}
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def flag_fields(options_class) -> list[dataclasses.Field]:
    """The fields of `options_class` that are flags, in declaration order (base classes first)."""
    return [
        field
        for field in dataclasses.fields(options_class)
        if field.metadata.get(_FLAG) and field.metadata.get(_HELP)
    ]


def _kind(options_class, field: dataclasses.Field) -> str:
    """ "bool", "int", "float", "list" or "string": the absl flag type of a field's annotation
    (`X | None` counts as X)."""
    annotation = typing.get_type_hints(options_class)[field.name]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = next(arg for arg in typing.get_args(annotation) if arg is not type(None))
    annotation = typing.get_origin(annotation) or annotation  # list[str] -> list
    for python_type, kind in ((bool, "bool"), (int, "int"), (float, "float"), (list, "list")):
        if annotation is python_type:
            return kind
    return "string"


def _default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def define_option_flags(
    options_class, flag_values: flags.FlagValues = flags.FLAGS, skip: Sequence[str] = ()
) -> None:
    """Defines a flag for each flag field of `options_class` on `flag_values` (absl's FLAGS by
    default). A flag already defined (by another options class of the same script) is left as
    it is; `skip` names fields not to define."""
    definers = {
        "bool": flags.DEFINE_bool,
        "int": flags.DEFINE_integer,
        "float": flags.DEFINE_float,
        "list": flags.DEFINE_list,
        "string": flags.DEFINE_string,
    }
    for field in flag_fields(options_class):
        if field.name in skip or field.name in flag_values:
            continue
        help_text = field.metadata[_HELP]
        choices = field.metadata[_CHOICES]
        if choices:
            flags.DEFINE_enum(
                field.name, _default(field), list(choices), help_text, flag_values=flag_values
            )
        else:
            definers[_kind(options_class, field)](
                field.name, _default(field), help_text, flag_values=flag_values
            )


def options_from_flags(options_class, flag_values: flags.FlagValues = flags.FLAGS, **overrides):
    """An `options_class` built from the parsed flags of its flag fields; `overrides` give the
    fields that are not flags (or replace a flag's value)."""
    values = {
        field.name: flag_values[field.name].value
        for field in flag_fields(options_class)
        if field.name in flag_values
    }
    values.update(overrides)
    return options_class(**values)


def flag_was_given(name: str, flag_values: flags.FlagValues = flags.FLAGS) -> bool:
    """Whether the command line set flag `name` (False for an undefined flag)."""
    return name in flag_values and flag_values[name].present
