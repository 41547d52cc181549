"""What the checks of modules share: building the learner's module beside the package's,
with the package's parameters copied in, and running both on the same inputs."""
from __future__ import annotations

import torch
from torch import nn

from .report import NotWritten, Outcome, Report, call, describe_difference, first_matching, raised


def randomise(module: nn.Module, seed: int) -> nn.Module:
    """Give every parameter random values (LayerNorm's 1s and 0s too), so that using one
    parameter where another belongs shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            scale = p.size(-1) ** -0.5 if p.dim() > 1 else 0.3
            p.copy_(torch.randn(p.shape, generator=g) * scale)
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.add_(1.0)             # around 1, as a trained norm's gain
    return module


def build_like(cls, cfg, reference: nn.Module, renames: dict[str, str], what: str):
    """The learner's ``cls(cfg)`` with the reference's parameters, its names mapped by
    ``renames`` (package prefix -> learner prefix). Returns (module, None) or (None, the
    reason in words)."""
    try:
        mine = call(cls, cfg)
    except NotWritten:
        raise
    except Exception as error:
        return None, f"building {what}({type(cfg).__name__}) failed: {raised(error)}"
    if not isinstance(mine, nn.Module):
        return None, f"{what}(cfg) should build an nn.Module, got {type(mine).__name__}"
    mine_names = set(mine.state_dict())
    state = dict(reference.state_dict())
    if set(state) != mine_names:           # the package's names, else the renamed ones
        state = {}
        for name, value in reference.state_dict().items():
            for old, new in renames.items():
                if name.startswith(old):
                    name = new + name[len(old):]
                    break
            state[name] = value
    missing, extra = sorted(set(state) - mine_names), sorted(mine_names - set(state))
    if missing or extra:
        return None, (f"its parameters are not the ones the skeleton's __init__ creates "
                      f"(missing: {', '.join(missing) or 'none'}; unexpected: "
                      f"{', '.join(extra) or 'none'}); keep the __init__ as given")
    try:
        mine.load_state_dict(state)
    except RuntimeError as error:
        return None, f"its parameters have other shapes than the package's: {error}"
    return mine.eval(), None


def compare_module(report: Report, title: str, mine, reference, inputs, mistakes, tol,
                   names=(), cast=None) -> bool:
    """Run both on ``inputs``; record the outcome; False at a difference."""
    try:
        with torch.no_grad():
            got = call(mine, *inputs)
    except NotWritten:
        raise
    except Exception as error:
        report.outcomes.append(Outcome(title, False, [raised(error)],
                                       raising_alike(mistakes, inputs, error)))
        return False
    with torch.no_grad():
        expected = reference(*(cast(x) if cast else x for x in inputs)).float()
    details = []
    if inputs[0].dtype == torch.bfloat16 and getattr(got, "dtype", None) != torch.bfloat16:
        details.append(f"the output's dtype is {getattr(got, 'dtype', None)}; for bfloat16 "
                       f"inputs and weights it should be bfloat16 too")
    details = details or describe_difference(expected, got, names, atol=tol, rtol=tol)
    if details:
        inputs32 = tuple(x.float() if torch.is_tensor(x) and x.is_floating_point() else x
                         for x in inputs)
        report.outcomes.append(Outcome(title, False, details,
                                       first_matching(mistakes, inputs32, got, tol, tol)))
        return False
    report.outcomes.append(Outcome(title, True))
    return True


def raising_alike(mistakes, inputs, error):
    """The first mistake that raises the same error as the learner's code did."""
    for mistake in mistakes:
        try:
            with torch.no_grad():
                mistake.compute(*inputs)
        except Exception as other:
            if type(other) is type(error) and str(other) == str(error):
                return mistake
    return None


def fail(report: Report, title: str, why: str) -> Report:
    report.outcomes.append(Outcome(title, False, [why]))
    return report
