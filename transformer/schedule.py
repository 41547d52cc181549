"""Section 5.3: the learning-rate schedule.

    lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)       -- equation (3)

Linear warm-up for ``warmup`` steps, then decay with the inverse square root of the
step; the two branches meet (and the rate peaks) at step = warmup. Steps count from 1.

Not in the paper: :func:`with_cooldown` ends a schedule with a linear fall to zero over its
last updates, for a run whose length is fixed in advance (the 30-minute recipe).
"""
from __future__ import annotations


def noam_lr(step: int, d_model: int, warmup: int = 4000, factor: float = 1.0) -> float:
    """Equation (3) at ``step`` (counted from 1), times ``factor``."""
    if step < 1:
        raise ValueError(f"noam_lr counts steps from 1, got step={step}")
    if d_model <= 0 or warmup <= 0:
        raise ValueError(f"noam_lr needs d_model > 0 and warmup > 0, got {d_model}, {warmup}")
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def no_warmup_lr(step: int, d_model: int, warmup: int = 4000, factor: float = 1.0) -> float:
    """Equation (3) with its warm-up taken out (a study of Table 3's extra rows): the peak
    rate d_model^-0.5 * warmup^-0.5 from step 1, then the same inverse-square-root decay,
    equal to :func:`noam_lr` from step ``warmup`` on."""
    if step < 1:
        raise ValueError(f"no_warmup_lr counts steps from 1, got step={step}")
    if d_model <= 0 or warmup <= 0:
        raise ValueError(f"no_warmup_lr needs d_model > 0 and warmup > 0, got {d_model}, "
                         f"{warmup}")
    return factor * d_model ** -0.5 * max(step, warmup) ** -0.5


def with_cooldown(lr, step: int, cooldown: int, end: int) -> float:
    """The schedule ``lr`` (a function of the step) ending in a linear cool-down: over the
    last ``cooldown`` updates up to ``end``, the rate reached at ``start = end - cooldown``
    falls linearly, lr(start) * (end - step + 1) / cooldown, to lr(start) / cooldown at
    update ``end``. ``cooldown = 0``: ``lr`` unchanged.

    Not in the paper. Equation (3)'s inverse-square-root decay leaves the rate high when a
    short run stops; a run whose length is set in advance can end with a decay to zero
    instead ("warmup-stable-decay", Hagele et al., 2024, "Scaling Laws and Compute-Optimal
    Training Beyond Fixed Training Durations").
    """
    start = end - cooldown
    if cooldown == 0 or step <= start:
        return lr(step)
    if step > end:
        raise ValueError(f"with_cooldown: update {step} is past the cool-down's end {end}")
    return lr(start) * (end - step + 1) / cooldown


SCHEDULES = {"noam": noam_lr, "no-warmup": no_warmup_lr}
"""The learning-rate schedules by name (``TrainConfig.lr_schedule``)."""
