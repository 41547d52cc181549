"""The command line's options: how a setting becomes an option.

Every ``train`` option is generated from a field of
:class:`~transformer.training.config.TrainConfig` (:func:`add_train_options`: its flag,
type, default, help, choices and bounds), so the two cannot drift apart (the way back, a
parsed command as a TrainConfig and a TrainConfig as a command, is
:mod:`transformer.training.command`'s). The other commands share their TrainConfig options
through :func:`add_common`, and a numeric option's bounds, checked by :func:`bounded`, are
stated in its ``--help`` (:class:`HelpFormatter`).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import typing

from ..training.config import TrainConfig, bounds_text, field_bounds, flag, out_of_bounds


class HelpFormatter(argparse.HelpFormatter):
    """Appends ``(default: ...)`` to every option's help unless the help already says
    its default, the option is required, or its default is ``None`` (then the help says
    what happens without it); and a numeric option's bounds, ``(range: >= 0, < 1)``."""

    def _get_help_string(self, action):
        text = action.help or ""
        if not ("%(default)" in text or "default:" in text or action.required
                or not action.option_strings or action.default in (None, argparse.SUPPRESS)):
            text += " (default: %(default)s)"
        bounds = bounds_text(*getattr(action.type, "bounds", ()))
        return f"{text} ({bounds})" if bounds else text


class DescribedHelpFormatter(argparse.RawDescriptionHelpFormatter, HelpFormatter):
    """:class:`HelpFormatter` that keeps the description's line breaks (the examples)."""


def bounded(kind, low=None, high=None, below=None, check=None):
    """An argparse type: ``kind`` within the bounds (the rule of TrainConfig's bounds,
    :func:`~transformer.training.config.out_of_bounds`), after ``check(value)`` when given
    (whose own words come first); ``--help`` states the bounds (:class:`HelpFormatter`)."""

    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind.__name__}, got {text!r}") from None
        if check is not None:
            try:
                check(value)
            except ValueError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None
        problem = out_of_bounds(value, low, high, below)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value
    parse.__name__ = kind.__name__
    parse.bounds = (low, high, below)
    return parse


def add_common(p, *names: str, **defaults) -> None:
    """The options the commands share with ``train`` (TrainConfig fields such as corpus,
    direction, data_root, device, threads): one flag, type, choices, bounds and help text
    for each, taken from the field; ``defaults`` replace a field's default."""
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    for name in names:
        f = fields[name]
        meta = f.metadata
        kw = dict(dest=name, default=defaults.get(name, f.default),
                  help=meta["help"].replace("%", "%%"))
        if "choices" in meta:
            kw["choices"] = meta["choices"]
        if isinstance(f.default, (int, float)) and not isinstance(f.default, bool):
            kw["type"] = bounded(type(f.default), *field_bounds(f))
        p.add_argument(flag(f), **kw)


def add_json(p, what: str) -> None:
    """``--json`` (``args.as_json``): a command that speaks in sentences (transformer/tools/
    words.py) prints ``what`` instead, for scripts."""
    p.add_argument("--json", action="store_true", dest="as_json",
                   help=f"print {what} instead of sentences (default: sentences; a run's "
                        f"records are JSON in its metrics.jsonl either way)")


# -------------------- the train command's options
def _override(text: str) -> tuple[str, object]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected FIELD=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


class _Overrides(argparse.Action):
    """``--model FIELD=VALUE``, repeatable, collected into a dict."""

    def __call__(self, parser, namespace, value, option_string=None):
        setattr(namespace, self.dest,
                {**(getattr(namespace, self.dest, None) or {}), value[0]: value[1]})


def add_train_options(p) -> None:
    """One option per TrainConfig field. An option not given is absent from the parsed
    arguments (``argparse.SUPPRESS``), so a ``--recipe``'s value stays."""
    defaults, hints = TrainConfig(), typing.get_type_hints(TrainConfig)
    for f in dataclasses.fields(TrainConfig):
        meta, default = f.metadata, getattr(defaults, f.name)
        kind = next((t for t in typing.get_args(hints[f.name]) if t is not type(None)),
                    hints[f.name])
        text = meta["help"].replace("%", "%%")
        if "default:" not in text and default is not None:
            text += f" (default: {'none' if kind is dict else default})"
        kw = dict(dest=f.name, help=text, default=argparse.SUPPRESS)
        if kind is bool:
            kw.update(action=argparse.BooleanOptionalAction)
        elif kind is dict:
            kw.update(action=_Overrides, type=_override, metavar="FIELD=VALUE")
        else:
            kw.update(type=bounded(kind, *field_bounds(f)))
            if "choices" in meta:
                kw["choices"] = meta["choices"]
            else:
                kw["metavar"] = (kind.__name__.upper() if kind in (int, float)
                                 else flag(f)[2:].upper().replace("-", "_"))
        p.add_argument(flag(f), **kw)
