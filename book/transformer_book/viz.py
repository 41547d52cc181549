"""The book's figures: slider figures, heatmaps and the attention explorer, whose
interactivity (plotly sliders and menus) works in the static HTML, without a kernel.

The book's helpers are split three ways: :mod:`.switches` (the quick build,
:func:`pick`, :func:`book_settings`), :mod:`.site` (the plotly renderer of the built
site, :func:`setup_plotly`) and this module, the figures. The chapters call those four
through this module (``viz.pick``, ``viz.setup_plotly()``), so that a chapter imports
one helper module. plotly is imported lazily, on first use. This module belongs to the book, not to the ``transformer``
library, which never imports it.
"""
from __future__ import annotations

from typing import Sequence

from .site import setup_plotly  # noqa: F401  (the chapters call viz.setup_plotly)
from .switches import book_settings, pick, quick  # noqa: F401  (and viz.pick, ...)


# --------------------------------------------------------------------- helpers
def token_labels(tokens: Sequence[str]) -> list[str]:
    """Unique axis labels ``"0:the", "1:cat", ...`` (repeated tokens would merge)."""
    return [f"{i}:{t}" for i, t in enumerate(tokens)]


def slider_figure(steps: Sequence[Sequence], step_labels: Sequence[str], *, title: str,
                  step_titles: Sequence[str] | None = None, slider_prefix: str = "",
                  active: int = 0, layout: dict | None = None):
    """One figure, one group of traces per slider step; the slider shows one group.

    ``steps[i]`` is the list of traces for step i (all steps must share axes).
    ``step_titles[i]`` replaces the title when step i is shown (default
    ``f"{title} - {step_labels[i]}"``). Works in static HTML: the slider toggles
    trace visibility with ``Plotly.update``, no kernel and no frames needed.
    """
    import plotly.graph_objects as go

    if len(steps) != len(step_labels):
        raise ValueError(f"{len(steps)} steps but {len(step_labels)} labels")
    if step_titles is None:
        step_titles = [f"{title} - {label}" for label in step_labels]
    fig = go.Figure()
    owner: list[int] = []
    for i, traces in enumerate(steps):
        for trace in traces:
            trace.visible = i == active
            fig.add_trace(trace)
            owner.append(i)
    slider_steps = [
        dict(label=str(label), method="update",
             args=[{"visible": [o == i for o in owner]}, {"title.text": step_titles[i]}])
        for i, label in enumerate(step_labels)
    ]
    fig.update_layout(
        title=dict(text=step_titles[active]),
        sliders=[dict(active=active, steps=slider_steps, pad=dict(t=50),
                      currentvalue=dict(prefix=slider_prefix))],
        **(layout or {}),
    )
    return fig


def heatmap(z, *, x=None, y=None, title: str, x_title: str, y_title: str,
            colorbar_title: str, colorscale: str = "Viridis", zmin=None, zmax=None,
            height: int | None = None, reverse_y: bool = True):
    """A single heatmap with title, axis titles and a titled colour bar.

    ``z`` is (rows, cols) (tensor, array or nested lists); row 0 is drawn at the top.
    """
    import plotly.graph_objects as go

    fig = go.Figure(heatmap_trace(z, x, y, colorbar_title, colorscale, zmin, zmax))
    fig.update_layout(title=dict(text=title), xaxis_title=x_title, yaxis_title=y_title,
                      height=height)
    if reverse_y:
        fig.update_yaxes(autorange="reversed")
    return fig


def _to_list(z):
    if hasattr(z, "detach"):
        z = z.detach().cpu()
    if hasattr(z, "tolist"):
        return z.tolist()
    return z


def heatmap_trace(z, x, y, colorbar_title, colorscale="Viridis", zmin=None, zmax=None,
                   hover_name: str = "value"):
    """One ``go.Heatmap`` trace with a titled colour bar and a hover label ``hover_name``."""
    import plotly.graph_objects as go

    return go.Heatmap(z=_to_list(z), x=x, y=y, colorscale=colorscale, zmin=zmin, zmax=zmax,
                      colorbar=dict(title=dict(text=colorbar_title)),
                      hovertemplate=f"x: %{{x}}<br>y: %{{y}}<br>{hover_name}: %{{z:.3f}}"
                                    "<extra></extra>")


def attention_heatmap(weights, query_tokens: Sequence[str], key_tokens: Sequence[str] | None = None,
                      *, title: str = "Attention weights", step_labels: Sequence[str] | None = None,
                      slider_prefix: str = "head: ", height: int | None = 520, active: int = 0):
    """Attention weights as a heatmap, with a slider when there are several maps.

    ``weights``: (q_len, k_len) or (n, q_len, k_len), e.g. one map per head or per
    layer/head pair (flatten them and name each in ``step_labels``, e.g. ``"L1 H3"``).
    Rows are queries (attending), columns keys (attended to); colour is the weight.
    ``active``: the map shown first.
    """
    w = weights.detach().cpu().float() if hasattr(weights, "detach") else weights
    if getattr(w, "ndim", None) == 2 or (isinstance(w, list) and not isinstance(w[0][0], list)):
        w = [w]
    key_tokens = query_tokens if key_tokens is None else key_tokens
    ys, xs = token_labels(query_tokens), token_labels(key_tokens)
    n = len(w)
    labels = list(step_labels) if step_labels is not None else [str(i + 1) for i in range(n)]
    layout = dict(xaxis=dict(title=dict(text="key (attended to)"), tickangle=-45),
                  yaxis=dict(title=dict(text="query (attending)"), autorange="reversed"),
                  height=height)
    if n == 1:
        import plotly.graph_objects as go
        fig = go.Figure(heatmap_trace(w[0], xs, ys, "attention weight", zmin=0, zmax=1,
                                       hover_name="weight"))
        fig.update_layout(title=dict(text=title), **layout)
        return fig
    steps = [[heatmap_trace(w[i], xs, ys, "attention weight", zmin=0, zmax=1,
                             hover_name="weight")] for i in range(n)]
    return slider_figure(steps, labels, title=title,
                         step_titles=[f"{title} ({slider_prefix}{lab})" for lab in labels],
                         slider_prefix=slider_prefix, active=active, layout=layout)


# ------------------------------------------------ two independent controls
def _rounded(value, digits: int | None):
    value = _to_list(value)
    if digits is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_rounded(v, digits) for v in value]
    if isinstance(value, float):
        return None if value != value else round(value, digits)     # NaN -> gap
    return value


def menu_slider_figure(make_trace, data, menu_labels: Sequence[str],
                       step_labels: Sequence[str], *, title: str,
                       step_titles: Sequence[str] | None = None,
                       menu_layouts: Sequence[dict] | None = None, slider_prefix: str = "",
                       menu_prefix: str = "", fixed_traces: Sequence = (),
                       active_menu: int = 0, active_step: int = 0, digits: int | None = None,
                       slider_pad: int = 60, layout: dict | None = None):
    """A figure explorable along two independent axes in static HTML: a dropdown and a slider.

    ``data[m][s]`` is the list of traces of slider step ``s`` when menu option ``m`` is
    chosen, each given as a dict of trace attributes (the same keys everywhere, e.g.
    ``{"z": ..., "x": ..., "y": ...}``); ``make_trace(attrs)`` builds a trace from one
    (e.g. ``lambda a: go.Heatmap(**a, colorscale="Viridis")``).

    Each slider step owns its traces and the slider shows one step's traces (``Plotly.update``
    of ``visible`` and the title, ``step_titles[s]``); the dropdown rewrites the data of every
    step's traces at once (``Plotly.update`` of the attributes, plus ``menu_layouts[m]``,
    by default the subtitle ``menu_labels[m]``). The two controls therefore compose: the
    slider keeps its position when the menu changes and the other way round, without a
    kernel. ``fixed_traces`` stay visible and untouched. ``digits`` rounds floats (smaller
    pages); NaN becomes a gap. The dropdown sits above the plot's top right corner (the
    title and subtitle stay readable at the left); ``slider_pad`` is the gap in pixels
    between the plot area and the slider (room for tick labels and the x-axis title).
    """
    import plotly.graph_objects as go

    n_menu, n_steps = len(menu_labels), len(step_labels)
    if len(data) != n_menu or any(len(d) != n_steps for d in data):
        raise ValueError(f"data must be {n_menu} menu options x {n_steps} slider steps")
    per_step = [len(traces) for traces in data[0]]
    if any([len(traces) for traces in d] != per_step for d in data):
        raise ValueError("every menu option needs the same number of traces per step")
    keys = sorted(data[0][0][0])
    if any(sorted(attrs) != keys for d in data for traces in d for attrs in traces):
        raise ValueError(f"every trace dict needs the same keys {keys}")
    if step_titles is None:
        step_titles = [f"{title} ({slider_prefix}{label})" for label in step_labels]
    if menu_layouts is None:
        menu_layouts = [{"title.subtitle.text": f"{menu_prefix}{label}"} for label in menu_labels]

    rounded = [[[{k: _rounded(v, digits) for k, v in attrs.items()} for attrs in traces]
                for traces in d] for d in data]
    fig = go.Figure()
    owner: list[int] = []
    for s, traces in enumerate(rounded[active_menu]):
        for attrs in traces:
            trace = make_trace(attrs)
            trace.visible = s == active_step
            fig.add_trace(trace)
            owner.append(s)
    n_step_traces = len(owner)
    for trace in fixed_traces:
        fig.add_trace(trace)
        owner.append(-1)
    step_indices = list(range(n_step_traces))

    slider_steps = [
        dict(label=str(label), method="update",
             args=[{"visible": [o == s or o == -1 for o in owner]}, {"title.text": step_titles[s]}])
        for s, label in enumerate(step_labels)]
    buttons = []
    for m, label in enumerate(menu_labels):
        flat = [attrs for traces in rounded[m] for attrs in traces]
        restyle = {k: [attrs[k] for attrs in flat] for k in keys}
        buttons.append(dict(label=str(label), method="update",
                            args=[restyle, dict(menu_layouts[m]), step_indices]))
    fig.update_layout(
        title=dict(text=step_titles[active_step]),
        sliders=[dict(active=active_step, steps=slider_steps, pad=dict(t=slider_pad),
                      currentvalue=dict(prefix=slider_prefix))],
        updatemenus=[dict(type="dropdown", buttons=buttons, active=active_menu,
                          direction="down", x=1.0, xanchor="right", y=1.02, yanchor="bottom",
                          showactive=True)],
        **(layout or {}))
    for key, value in menu_layouts[active_menu].items():      # the initial menu's layout
        fig.update_layout({key.replace(".", "_"): value})
    return fig


def piece_words(pieces: Sequence[str]) -> list[str]:
    """The whole word each BPE piece belongs to (``"▁L", "aw"`` -> ``"Law", "Law"``), for
    finding a word among pieces; a special token (``⟨/s⟩``) or a piece of punctuation is a
    word of its own."""
    words = word_starts(pieces)
    text = {s: "".join(pieces[j] for j in range(s, len(pieces)) if words[j] == s).lstrip("▁")
            for s in set(words)}
    return [text[s] for s in words]


def word_starts(pieces: Sequence[str]) -> list[int]:
    """For each BPE piece, the position of the first piece of its word (:func:`piece_words`)."""
    def alone(p):
        return p.startswith("⟨") or not any(c.isalnum() for c in p)

    words, start = [], 0
    for i, p in enumerate(pieces):
        if i == 0 or p.startswith("▁") or alone(p) or alone(pieces[i - 1]):
            start = i
        words.append(start)
    return words


ATTENTION_KINDS = {   # recorder part -> (name, query side, key side)
    "encoder.self": ("encoder self-attention", "source", "source"),
    "decoder.self": ("decoder self-attention (masked)", "target", "target"),
    # a cross-attention row gathers from the source what the decoder needs for its next
    # token, so its rows are labelled by the token they predict, not by the input token
    "decoder.cross": ("encoder-decoder attention", "predicted", "source"),
}
# What each side's labels are, for axis titles: "query: <this>"
SIDE_TITLES = {"source": "source token", "target": "decoder input token",
               "predicted": "target token it predicts"}


def attention_explorer(examples: Sequence[dict], *, title: str = "Attention explorer",
                       kinds: Sequence[str] = tuple(ATTENTION_KINDS), height: int = 680,
                       digits: int = 3):
    """Every layer and head of several sentences and attention kinds, in one static figure.

    ``examples``: dicts with ``"name"``, ``"source"`` (source token strings, keys and
    queries of the encoder), ``"target"`` (the decoder's input tokens, BOS first),
    ``"predicted"`` (the token each decoder row predicts: ``target`` shifted left by one,
    then the last prediction, usually EOS; the labels of cross-attention rows) and
    ``"weights"``: ``{kind: (layers, heads, q_len, k_len)}`` for each kind of
    :data:`ATTENTION_KINDS` (``recorder.stacked(kind)[:, b]``). The dropdown picks a
    sentence and kind, the slider a layer and head (a stack with fewer layers shows an
    empty map). Axis labels are made unique (``"3:the"``); hover shows the weight.
    """
    import math

    import plotly.graph_objects as go

    n_layers = max(ex["weights"][k].shape[0] for ex in examples for k in kinds)
    n_heads = max(ex["weights"][k].shape[1] for ex in examples for k in kinds)
    step_labels = [f"layer {l + 1}, head {h + 1}" for l in range(n_layers) for h in range(n_heads)]
    menu_labels, menu_layouts, data = [], [], []
    for ex in examples:
        for kind in kinds:
            name, q_side, k_side = ATTENTION_KINDS[kind]
            ys = token_labels(ex[q_side])
            xs = token_labels(ex[k_side])
            w = ex["weights"][kind]
            w = w.detach().cpu().float() if hasattr(w, "detach") else w
            steps = []
            for l in range(n_layers):
                for h in range(n_heads):
                    if l < w.shape[0] and h < w.shape[1]:
                        z = _to_list(w[l][h])
                    else:
                        z = [[math.nan] * len(xs) for _ in ys]
                    steps.append([{"z": z, "x": xs, "y": ys}])
            data.append(steps)
            label = f"{ex['name']}: {name}"
            menu_labels.append(label)
            menu_layouts.append({
                "title.subtitle.text": label,
                "xaxis.title.text": f"key: {SIDE_TITLES[k_side]} (attended to)",
                "yaxis.title.text": f"query: {SIDE_TITLES[q_side]}"
                                    + ("" if q_side == "predicted" else " (attending)")})

    def make_trace(attrs):
        return go.Heatmap(**attrs, zmin=0, zmax=1, colorscale="Viridis",
                          colorbar=dict(title=dict(text="attention weight")),
                          hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>")

    return menu_slider_figure(
        make_trace, data, menu_labels, step_labels, title=title, menu_layouts=menu_layouts,
        step_titles=[f"{title}: {label}" for label in step_labels], digits=digits,
        slider_pad=120, layout=dict(height=height, margin=dict(t=120),
                    xaxis=dict(tickangle=-45, type="category"),
                    yaxis=dict(autorange="reversed", type="category")))


# ------------------------------------------------ the paper's attention figures
# The paper's figures colour heads 1 to 8 in d3's category10 (transformer_book/paper_figures.py
# reads the heads' numbers from that colour bar); plotly's qualitative.D3 is that palette.
HEAD_COLOURS = ("#1F77B4", "#FF7F0E", "#2CA02C", "#D62728", "#9467BD", "#8C564B", "#E377C2",
                "#7F7F7F", "#BCBD22", "#17BECF")


def head_colour(head: int | None) -> str:
    """The colour of head ``head`` (numbered from 1, as the paper does); grey-black for
    lines of no one head."""
    return "#444" if head is None else HEAD_COLOURS[(head - 1) % len(HEAD_COLOURS)]


def attention_lines(panels: Sequence[dict], *, title: str, row_px: int = 20,
                    subtitle: str | None = None):
    """Attention drawn as the paper's Figures 3 to 5 draw it: two copies of a sentence, one
    beside the other, and a line from each word (left) to each word it attends to (right),
    one colour per head, thick for a strong weight and thin for a weak one. A head has
    the paper's colour for its number (:data:`HEAD_COLOURS`: head 1 blue, 2 orange, 3 green,
    4 red, 5 purple, 6 brown, 7 pink, 8 grey), in the model's panel too.

    ``panels``: dicts with ``"title"``, ``"tokens"``, ``"edges"`` (``paper_figures.Edge``:
    head, query, key, strength, weight) and ``"legend"`` (the prefix of its heads' legend
    entries, e.g. ``"paper"``); the panels stand side by side (stacked on a phone,
    book/_ext/static/lib/phone_layout.js). ``row_px``: the height of one token's row.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    n = len(panels)
    fig = make_subplots(rows=1, cols=n, subplot_titles=[p["title"] for p in panels],
                        horizontal_spacing=0.08)
    longest = max(len(p["tokens"]) for p in panels)
    for col, panel in enumerate(panels, start=1):
        tokens, edges = list(panel["tokens"]), list(panel["edges"])
        queries = {e.query for e in edges}
        heads = sorted({e.head for e in edges}, key=lambda h: (h is None, h or 0))
        for index, head in enumerate(heads):
            step = min(0.15, 0.6 / len(heads))               # heads' lines side by side,
            shift = (index - (len(heads) - 1) / 2) * step   # within a row's height
            colour = head_colour(head)
            name = f"{panel['legend']}, " + (f"head {head}" if head is not None else "many heads")
            for strength, width, opacity in (("strong", 4, 0.9), ("weak", 1.5, 0.5)):
                mine = [e for e in edges if e.head == head and e.strength == strength]
                if not mine:
                    continue
                xs, ys, hover = [], [], []
                for e in mine:
                    label = f"{name}: {tokens[e.query]} → {tokens[e.key]} ({strength}" + (
                        f", weight {e.weight:.2f})" if e.weight is not None else ")")
                    xs += [0, 1, None]
                    ys += [e.query + shift, e.key + shift, None]
                    hover += [label, label, None]
                fig.add_trace(go.Scatter(
                    x=xs, y=ys, mode="lines", line=dict(color=colour, width=width),
                    opacity=opacity, name=name, legendgroup=name,
                    showlegend=strength == "strong" or not any(
                        e.head == head and e.strength == "strong" for e in edges),
                    text=hover, hoverinfo="text"), row=1, col=col)
        bold = [f"<b>{t}</b>" if i in queries and len(queries) < len(tokens) else t
                for i, t in enumerate(tokens)]
        for x, position in ((0, "middle left"), (1, "middle right")):
            fig.add_trace(go.Scatter(
                x=[x] * len(tokens), y=list(range(len(tokens))), mode="text", text=bold,
                textposition=position, textfont=dict(size=11), showlegend=False,
                hoverinfo="skip"), row=1, col=col)
        bare = dict(showgrid=False, zeroline=False, showticklabels=False, ticks="",
                    fixedrange=True)      # drawn (a phone stacks the panels), but bare
        fig.update_xaxes(range=[-1.3, 2.3], **bare, row=1, col=col)
        fig.update_yaxes(range=[longest - 0.5, -0.5], **bare, row=1, col=col)
    fig.update_layout(title=dict(text=title, subtitle=dict(text=subtitle or "")),
                      height=longest * row_px + 230, margin=dict(t=140, l=10, r=10),
                      plot_bgcolor="white",
                      legend=dict(orientation="h", x=0, y=-0.02, yanchor="top"))
    return fig


# ------------------------------------------------------------ a training update's time
# The kinds of work of benchmarks/cpu/step_profile.py, one colour each: the forward pass
# solid, the backward hatched in the same colour.
STEP_COLOURS = {"matrix multiplies": "#1f77b4", "attention": "#ff7f0e", "norms": "#2ca02c",
                "embeddings": "#9467bd", "loss": "#d62728", "casts": "#8c564b",
                "element-wise and copies": "#e377c2", "Adam": "#bcbd22", "Muon": "#17becf",
                "data and batching": "#7f7f7f", "other": "#c7c7c7"}
PRECISION_LABELS = {"fp32": "fp32", "bf16": "bf16 autocast"}


def step_profile(record: dict):
    """A stacked bar per precision: each part's share of one training update, from the
    record ``book/results/step_profile.json`` (``benchmarks/cpu/step_profile.py``); the
    hover gives the part's seconds, the axis label the seconds of the whole update."""
    import plotly.graph_objects as go

    runs = record["precisions"]
    x = [f"{PRECISION_LABELS.get(p, p)}<br>{r['seconds_per_update']:.2g} s an update"
         for p, r in runs.items()]
    fig = go.Figure()
    for part in record["parts"]:
        shares = [r["shares"][part] for r in runs.values()]
        if not any(shares):
            continue
        stage, _, kind = part.rpartition(": ")
        fig.add_trace(go.Bar(
            x=x, y=[100 * s for s in shares], name=part,
            marker=dict(color=STEP_COLOURS[kind],
                        pattern=dict(shape="/" if stage == "backward" else "")),
            customdata=[s * r["seconds_per_update"] for s, r in zip(shares, runs.values())],
            hovertemplate=f"{part}: %{{y:.1f}}% (%{{customdata:.3g}} s)<extra></extra>"))
    fig.update_layout(barmode="stack", title=dict(text="Where one training update's time goes"),
                      yaxis=dict(title="share of the update (%)", range=[0, 100]),
                      legend=dict(traceorder="normal"))
    return fig
