"""What a training run leaves for people to read: the model card of an exported model and the training-curve plot."""

from pathlib import Path

import yaml


def _metric_rows(metrics: dict) -> list[tuple[str, str, float, float]]:
    rows = []
    for key, value in metrics.items():
        if key.endswith("/bleu"):
            valid_set, direction, _ = key.split("/")
            rows.append((valid_set, direction, value, metrics.get(f"{valid_set}/{direction}/chrf", float("nan"))))
    return rows


def model_card(config, metrics: dict, data_summary: dict) -> str:
    """A Hub model card: YAML metadata (languages, license, metrics as a model-index), data, results, usage."""
    rows = _metric_rows(metrics)
    metadata = {
        "language": ["en", "zh"],
        "license": "apache-2.0",
        "library_name": "transformers",
        "pipeline_tag": "translation",
        "tags": ["translation", "zhen", "custom_code"],
        "model-index": [
            {
                "name": Path(config.output_dir).name,
                "results": [
                    {
                        "task": {"type": "translation", "name": f"Translation {direction}"},
                        "dataset": {"name": valid_set, "type": valid_set},
                        "metrics": [
                            {"type": "bleu", "value": round(bleu, 2), "name": "BLEU (sacreBLEU)"},
                            {"type": "chrf", "value": round(chrf, 2), "name": "chrF (sacreBLEU)"},
                        ],
                    }
                    for valid_set, direction, bleu, chrf in rows
                ],
            }
        ],
    }
    table = "\n".join(f"| {s} | {d} | {b:.2f} | {c:.2f} |" for s, d, b, c in rows) or "| – | – | – | – |"
    model = dict(config.model_overrides, preset=config.preset)
    return f"""---
{yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True).strip()}
---

# zhen English⇄Chinese translation model

An encoder-decoder Transformer trained with [zhen](https://github.com/zhen-nmt/zhen) that translates English→Chinese
and Chinese→English with one model; the target language is chosen by forcing its code (`__en__` / `__zh__`) as the
first generated token.

## Results

Validation scores at step {metrics.get("step", "?")} (sacreBLEU; Chinese targets scored with the `zh` tokenizer,
English with `13a`; decoding with {config.eval_num_beams} beam(s), {config.eval_bleu_samples} sentences per set and
direction).

| validation set | direction | BLEU | chrF |
| --- | --- | ---: | ---: |
{table}

## Training data

- Source: {data_summary.get("train_source", "?")}
- Pairs after cleaning: {data_summary.get("train_pairs", "?")}; training examples ({config.directions}):
  {data_summary.get("train_examples", "?")}
- Chinese targets converted to Simplified: {"yes" if config.simplify_chinese else "no"}

```
{data_summary.get("cleaning", "").strip()}
```

## Training

Model `{model}`; token-budget batches of {config.max_tokens} tokens x {config.gradient_accumulation_steps}
accumulation steps; AdamW, peak learning rate {config.learning_rate}, {config.lr_scheduler} schedule with
{config.warmup_steps} warmup steps; label smoothing {config.label_smoothing}. The full configuration is in
`training_config.json`.

## Usage

```python
import zhen  # pip install zhen-transformer

print(zhen.translate(["How are you?"], model="path/or/repo", src_lang="en", tgt_lang="zh"))
```

Without zhen installed, the model loads as custom code:

```python
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

tokenizer = AutoTokenizer.from_pretrained("path/or/repo", trust_remote_code=True)
model = AutoModelForSeq2SeqLM.from_pretrained("path/or/repo", trust_remote_code=True)
inputs = tokenizer._build_translation_inputs("How are you?", "pt", src_lang="en", tgt_lang="zh")
print(tokenizer.batch_decode(model.generate(**inputs), skip_special_tokens=True))

translator = pipeline("translation", model="path/or/repo", trust_remote_code=True)
print(translator("How are you?", src_lang="en", tgt_lang="zh"))
```
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
