"""The `eval --plot` figure: pass@k curves for one input, pass@1 (+- SEM) and pass@k across several, rendered to
bytes. Writing them is the output contract's job (streams/outputs.py, "replace"): the old plot stays whole until
the new one is complete, so a full disk or a kill cannot leave it truncated, as matplotlib's in-place savefig did.

The format is the file name's suffix when matplotlib's Agg canvas can write it (png, pdf, svg, ...), PNG when the
name has none; the file written is always the path given (savefig appended `.png` to a name without a suffix, so
`--plot DIR/` wrote `DIR/.png`)."""

from __future__ import annotations

import io
from pathlib import Path

from swerl_cli.evaluation.metrics import Report, short_labels


def _formats() -> dict[str, str]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    return FigureCanvasAgg.get_supported_filetypes()


def plot_format(path: str) -> str | None:
    """The image format `path` asks for by its suffix ('png' when it has none); None when matplotlib cannot write
    that suffix."""
    suffix = Path(path).suffix.lower().removeprefix(".")
    if not suffix:
        return "png"
    return suffix if suffix in _formats() else None


def plot_formats() -> list[str]:
    """The suffixes plot_format accepts, sorted."""
    return sorted(_formats())


def render_plot(reports: list[Report], fmt: str = "png") -> bytes:
    """The figure as `fmt` bytes: pass@k curves for one input; pass@1 (+- SEM) and pass@k across inputs for
    several."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    try:
        if len(reports) == 1:
            rep = reports[0]
            ks = sorted(rep.pass_at_k)
            ax.plot(ks, [rep.pass_at_k[k] for k in ks], marker="o", label=short_labels([rep.source])[0])
            ax.set_xlabel("k")
            ax.set_ylabel("pass@k")
            ax.set_title("pass@k")
        else:
            xs = list(range(len(reports)))
            pass1 = [r.pass1 for r in reports]
            ax.errorbar(xs, pass1, yerr=[r.pass1_sem for r in reports], marker="o", capsize=3, label="pass@1 ± SEM")
            top_k = min((max(r.pass_at_k) for r in reports if r.pass_at_k), default=1)
            if top_k > 1:
                top = [r.pass_at_k.get(top_k, float("nan")) for r in reports]
                ax.plot(xs, top, marker="s", label=f"pass@{top_k}")
            ax.set_xticks(xs, short_labels([r.source for r in reports]), rotation=20, ha="right", fontsize=8)
            ax.set_ylabel("resolve rate")
            ax.set_title("metrics across inputs")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt)
        return buf.getvalue()
    finally:
        plt.close(fig)
