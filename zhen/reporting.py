"""What a training run leaves for people to read: the model card of an exported model and the training-curve plot."""

from pathlib import Path


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
                "sentences": result.get(f"{valid_set}/{direction}/sentences", ""),
                "bleu": bleu,
                "chrf": result.get(f"{valid_set}/{direction}/chrf", float("nan")),
                "bleu_signature": result.get(f"{valid_set}/{direction}/signature"),
            }
    return metrics


def training_sections(config, data_summary: dict) -> str:
    """Model-card sections on the data and the training run, from the run's configuration and data summary."""
    model = dict(config.model_overrides, preset=config.preset)
    return f"""## Training data

- Source: {data_summary.get("train_source", "?")}
- Pairs after cleaning: {data_summary.get("train_pairs", "?")}; training examples ({config.directions}):
  {data_summary.get("train_examples", "?")}; Chinese targets converted to Simplified:
  {"yes" if config.simplify_chinese else "no"}

```
{data_summary.get("cleaning", "").strip()}
```

## Training

Trained with `zhen-train`: model `{model}`; token-budget batches of {config.max_tokens} tokens x
{config.gradient_accumulation_steps} accumulation steps; AdamW, peak learning rate {config.learning_rate},
{config.lr_scheduler} schedule with {config.warmup_steps} warmup steps; label smoothing {config.label_smoothing}.
Validation BLEU is measured on {config.eval_bleu_samples} sentences per set and direction with
{config.eval_num_beams} beam(s). The full configuration is in `training_config.json`, the curves in
`training_curve.png`.
"""


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
