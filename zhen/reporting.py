"""What a training run leaves for people to read: the model card of an exported model and the training-curve plot."""

from pathlib import Path


# Corpora whose licence zhen knows, recognised by how a training file's path ends (the layout of the project's
# shared data) or by a word in it: (path endings, words, what the model card says about them).
KNOWN_CORPORA = (
    (
        ("tatoeba/train.jsonl.gz", "tatoeba/train.jsonl"),
        ("tatoeba",),
        "Tatoeba sentence pairs (the manythings.org `cmn-eng` export of https://tatoeba.org): short everyday "
        "sentences. Licence: CC-BY 2.0 FR. Attribution: www.manythings.org/anki and tatoeba.org.",
    ),
    (
        ("news/train.jsonl.gz", "news/train.jsonl"),
        (),
        "A mostly-news mix of WMT development and test sets (newsdev2017, newstest2020 and 2021, generaltest2022 "
        "and 2023, the WMT24 test set) and the UN Parallel Corpus v1.0 development set. Licences: the WMT test sets "
        "are released by the WMT shared-task organizers for research use (source texts remain the copyright of their "
        "publishers; references were commissioned by WMT, http://www.statmt.org/); the UN Parallel Corpus v1.0 "
        "(Ziemski, Junczys-Dowmunt and Pouliquen, LREC 2016) is free to use and is provided by the United Nations "
        "without warranty of any kind.",
    ),
    (
        (),
        ("zhen sample corpus", "zhen/sample_data"),
        "The zhen sample corpus: 615 short everyday sentence pairs written by the zhen project for demos and tests. "
        "Licence: CC0 1.0 (public domain).",
    ),
)


def card_metrics(result: dict) -> dict[str, dict]:
    """An evaluation of the trainer (`{"tatoeba/en-zh/bleu": ..., "tatoeba/en-zh/chrf": ...}`) in the per-result form
    of `zhen.hub.render_model_card`."""
    metrics = {}
    for key, bleu in result.items():
        if key.endswith("/bleu"):
            valid_set, direction, _ = key.split("/")
            metrics[f"{valid_set}/{direction}"] = {
                "direction": direction,
                "test_set": f"{valid_set} (validation, step {result.get('step', '?')})",
                "dataset": valid_set,
                "split": "validation",
                "sentences": result.get(f"{valid_set}/{direction}/sentences", ""),
                "bleu": bleu,
                "chrf": result.get(f"{valid_set}/{direction}/chrf", float("nan")),
                "bleu_signature": result.get(f"{valid_set}/{direction}/signature"),
            }
    return metrics


def data_sources(sources: list[str]) -> list[str]:
    """Model-card lines on where training data came from and under which licence, one per corpus: zhen's known
    corpora (see `KNOWN_CORPORA`) with their licence and attribution, anything else with a request to state it."""
    lines, known = [], set()
    for source in sources:
        normalized = source.replace("\\", "/").lower()
        match = next(
            (
                description
                for endings, words, description in KNOWN_CORPORA
                if normalized.endswith(endings) or any(word in normalized for word in words)
            ),
            None,
        )
        if match is None:
            lines.append(
                f"`{source}`: its licence is not recorded here; check it (for a Hub dataset, its dataset card) and "
                "state it before publishing this model."
            )
        elif match not in known:
            known.add(match)
            lines.append(match)
    return lines


def training_sections(config, data_summary: dict) -> str:
    """Model-card sections on the data (with licences and attribution) and the training run, from the run's
    configuration and data summary."""
    sources = _training_sources(config, data_summary)
    cleaning = data_summary.get("cleaning", "").strip()
    lines = [
        "## Training data",
        "",
        *(f"- {line}" for line in data_sources(sources)),
        "",
        f"Pairs after cleaning: {data_summary.get('train_pairs', '?')}; training examples "
        f"({_directions_text(config.directions)}): {data_summary.get('train_examples', '?')}. Chinese targets "
        f"converted to Simplified Chinese (OpenCC t2s): {'yes' if config.simplify_chinese else 'no'}.",
    ]
    if cleaning:
        lines += ["", "Cleaning:", "", "```", cleaning, "```"]
    lines += [
        "",
        "## Training",
        "",
        f"{_origin_text(config)} with `zhen-train`: {_model_text(config)}; batches of up to {config.max_tokens} "
        f"tokens x {config.gradient_accumulation_steps} accumulation step(s); AdamW, peak learning rate "
        f"{config.learning_rate}, {config.lr_scheduler} schedule with {config.warmup_steps} warmup steps; label "
        f"smoothing {config.label_smoothing}. Validation BLEU is measured on {config.eval_bleu_samples} sentences per "
        f"set and direction with {_beams_text(config.eval_num_beams)}. The full configuration is in "
        "`training_config.json`, the curves in `training_curve.png`.",
    ]
    return "\n".join(lines) + "\n"


def _training_sources(config, data_summary: dict) -> list[str]:
    if getattr(config, "dataset", None):
        return [config.dataset]
    if getattr(config, "train_files", None):
        return list(config.train_files)
    return [data_summary.get("train_source") or "zhen sample corpus"]


def _origin_text(config) -> str:
    init_from = getattr(config, "init_from", None)
    return f"Trained from the checkpoint `{init_from}`" if init_from else "Trained from scratch"


def _directions_text(directions: str) -> str:
    return "each pair used in both directions" if directions == "both" else directions.replace("-", "→")


def _beams_text(num_beams: int) -> str:
    return "greedy search" if num_beams == 1 else f"beam search ({num_beams} beams)"


def _model_text(config) -> str:
    """The model as "the `small` preset" plus its overrides in words, never as a Python dict."""
    overrides = ", ".join(f"{key} {_value_text(value)}" for key, value in sorted(config.model_overrides.items()))
    return f"the `{config.preset}` preset" + (f" with {overrides}" if overrides else "")


def _value_text(value) -> str:
    if isinstance(value, dict):
        return "(" + ", ".join(f"{key} {_value_text(item)}" for key, item in value.items()) + ")"
    return str(value)


def plot_training_curves(history: list[dict], path: str | Path) -> None:
    """Training and validation loss, and validation BLEU per set and direction, against optimizer steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [h for h in history if h.get("type") == "train"]
    evals = [h for h in history if h.get("type") == "eval"]
    fig, (loss_ax, bleu_ax) = plt.subplots(1, 2, figsize=(11, 4))
    loss_ax.plot([h["step"] for h in train], [h["loss"] for h in train], label="training loss (smoothed labels)")
    for key in sorted({k for h in evals for k in h if k.endswith("/loss")}):
        loss_ax.plot([h["step"] for h in evals], [h.get(key) for h in evals], marker="o", label=f"{key} (NLL)")
    loss_ax.set(xlabel="step", ylabel="loss per target token", title="Loss")
    loss_ax.legend(fontsize=8)
    for key in sorted({k for h in evals for k in h if k.endswith("/bleu")}):
        bleu_ax.plot(
            [h["step"] for h in evals], [h.get(key) for h in evals], marker="o", label=key.removesuffix("/bleu")
        )
    bleu_ax.set(xlabel="step", ylabel="BLEU", title="Validation BLEU")
    if bleu_ax.lines:
        bleu_ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
