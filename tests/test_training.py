"""Training pipeline tests: batching, configuration, data errors, checkpoints, exact resume after kill -9, and a tiny
end-to-end run from the sample corpus to a model that loads with the Auto classes and translates."""

import gzip
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from accelerate.state import AcceleratorState
from safetensors.torch import load_file, save_file

from zhen import fast_generation, hardware
from zhen.batching import Seq2SeqCollator, padding_fraction, shard_batches, token_budget_batches, weighted_epoch
from zhen.checkpointing import average_checkpoints, checkpoint_steps, latest_checkpoint, save_checkpoint
from zhen.commands.train import resolve_config
from zhen.training import final_step, make_scheduler, train
from zhen.training_config import RECIPES_DIR, TrainingConfig, make_config, read_config_file


TINY = [
    "--preset", "tiny", "--model-overrides", "d_model=64", "encoder_ffn_dim=128", "decoder_ffn_dim=128",
    "--vocab-size", "600", "--max-tokens", "512", "--eval-bleu-samples", "4", "--logging-steps", "5",
]  # fmt: skip


pytestmark = pytest.mark.usefixtures("fresh_accelerator_state")


# --- batching ---------------------------------------------------------------------------------------------------------


def random_lengths(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    source = rng.integers(3, 120, n)
    return source, np.clip(source + rng.integers(-10, 30, n), 2, 128)


@pytest.mark.parametrize("max_tokens", [128, 1000, 4096])
def test_token_budget_batches_respect_budget_and_cover_every_example_once(max_tokens):
    source, target = random_lengths()
    for epoch in range(3):
        batches = token_budget_batches(source, target, max_tokens, seed=1, epoch=epoch)
        for batch in batches:
            assert len(batch) * max(source[batch].max(), target[batch].max()) <= max_tokens
        flat = sorted(i for batch in batches for i in batch)
        assert flat == list(range(len(source)))


def test_token_budget_batches_are_reproducible_and_change_with_epoch():
    source, target = random_lengths()
    first = token_budget_batches(source, target, 2048, seed=7, epoch=0)
    assert first == token_budget_batches(source, target, 2048, seed=7, epoch=0)
    assert first != token_budget_batches(source, target, 2048, seed=7, epoch=1)
    assert first != token_budget_batches(source, target, 2048, seed=8, epoch=0)


def test_length_bucketing_keeps_padding_low():
    source, target = random_lengths()
    bucketed = token_budget_batches(source, target, 4096, seed=0, epoch=0)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(source))
    unbucketed = [order[i : i + len(b)].tolist() for i, b in zip(np.cumsum([0] + [len(b) for b in bucketed]), bucketed)]
    assert padding_fraction(bucketed, source, target) < 0.25 < padding_fraction(unbucketed, source, target)


def test_an_example_over_the_budget_is_an_error():
    with pytest.raises(ValueError, match="exceeds max_tokens=50"):
        token_budget_batches([10, 60], [10, 10], 50, seed=0, epoch=0)


def test_shards_are_equal_in_count_and_cover_all_batches():
    batches = [[i] for i in range(10)]
    shards = [shard_batches(batches, rank, 4) for rank in range(4)]
    assert {len(shard) for shard in shards} == {3}
    assert sorted({b[0] for shard in shards for b in shard}) == list(range(10))
    assert shard_batches(batches, 0, 1) == batches


def test_weighted_epoch_repeats_whole_weights_and_draws_fractions_anew_each_epoch():
    corpus = np.repeat([0, 1, 2], [100, 40, 10])
    epoch = weighted_epoch(corpus, [2.5, 1.0, 0.3], seed=3, epoch=0)
    assert np.bincount(corpus[epoch]).tolist() == [250, 40, 3]
    counts = np.bincount(epoch, minlength=len(corpus))
    assert set(counts[:100]) == {2, 3} and set(counts[100:140]) == {1} and sorted(set(counts[140:])) == [0, 1]
    assert np.array_equal(epoch, weighted_epoch(corpus, [2.5, 1.0, 0.3], seed=3, epoch=0))  # resumable
    assert not np.array_equal(epoch, weighted_epoch(corpus, [2.5, 1.0, 0.3], seed=3, epoch=1))
    assert np.array_equal(weighted_epoch(corpus, [1, 1, 1], seed=3, epoch=0), np.arange(len(corpus)))


def test_collator_pads_inputs_and_masks_labels():
    batch = Seq2SeqCollator(pad_token_id=0)(
        [{"input_ids": [4, 9, 2], "labels": [5, 8, 8, 2]}, {"input_ids": [4, 2], "labels": [5, 2]}]
    )
    assert batch["input_ids"].tolist() == [[4, 9, 2], [4, 2, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch["labels"].tolist() == [[5, 8, 8, 2], [5, 2, -100, -100]]


# --- configuration ----------------------------------------------------------------------------------------------------


def test_config_file_then_flags_override_defaults(tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        "train_files: [a.jsonl]\nlearning_rate: 0.001\nmax_tokens: 2048\nmodel_overrides: {d_model: 256}\n"
    )
    config = resolve_config(["--config", str(recipe), "--max-tokens", "1024", "--model-overrides", "dropout=0.3"])
    assert config.train_files == ["a.jsonl"] and config.learning_rate == 0.001 and config.max_tokens == 1024
    assert config.model_overrides == {"d_model": 256, "dropout": 0.3}
    assert config.preset == "small"  # a run that names data starts from the defaults, not the sample recipe


def test_no_data_means_the_sample_recipe():
    config = resolve_config([])
    assert config.uses_sample_data and config.output_dir == "runs/zhen-sample" and config.preset == "tiny"
    assert resolve_config(["--max-steps", "7"]).max_steps == 7


def test_shipped_recipes_are_found_by_name_and_files_win(tmp_path, monkeypatch):
    config = resolve_config(["--config", "small-cpu", "--train-files", "a.jsonl", "--max-minutes", "120"])
    assert config.preset == "small" and config.vocab_size == 16000 and config.lr_scheduler == "linear"
    assert config.max_minutes == 120 and config.warmup_ratio == 0.3  # the flag wins, the recipe fills the rest
    assert config.train_files == ["a.jsonl"] and read_config_file("small-cpu")["max_minutes"] == 30
    for recipe in RECIPES_DIR.glob("*.yaml"):  # every shipped recipe holds only known fields with valid values
        make_config(read_config_file(recipe.stem) | {"train_files": ["a.jsonl"]})
    monkeypatch.chdir(tmp_path)
    (tmp_path / "small-cpu").write_text("preset: tiny\n")
    assert read_config_file("small-cpu") == {"preset": "tiny"}  # a file of that name is the user's, not the recipe
    with pytest.raises(FileNotFoundError, match=r"zhen's recipes: \[.*'small-cpu'"):
        read_config_file("no-such-recipe")


def test_config_errors_name_the_problem(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("learning_rat: 0.1\n")
    with pytest.raises(ValueError, match=r"unknown configuration field\(s\) \['learning_rat'\]"):
        read_config_file(bad)
    with pytest.raises(ValueError, match="lr_scheduler='polynomial' is not one of"):
        TrainingConfig(lr_scheduler="polynomial")
    with pytest.raises(ValueError, match="max_tokens=64 cannot hold one example"):
        TrainingConfig(max_tokens=64)


def learning_rates(steps: int, total_steps: int, **config) -> list[float]:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    scheduler = make_scheduler(optimizer, TrainingConfig(**config), total_steps)
    rates = []
    for _ in range(steps):
        rates.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    return rates


def test_learning_rate_schedules():
    """Transformers' schedules: warmup from 0, then 1/sqrt(step) (the Transformer paper's), cosine to a floor, or
    constant; `rates[s]` is the learning rate of optimizer step s."""
    inverse_sqrt = learning_rates(401, 1000, warmup_steps=100)
    assert inverse_sqrt[0] == 0 and inverse_sqrt[50] == pytest.approx(0.5) and inverse_sqrt[100] == pytest.approx(1.0)
    assert inverse_sqrt[400] == pytest.approx(0.5)  # sqrt(100 / 400)
    cosine = learning_rates(111, 110, warmup_steps=10, lr_scheduler="cosine", min_lr_ratio=0.1)
    assert cosine[10] == pytest.approx(1.0) and cosine[60] == pytest.approx(0.55) and cosine[110] == pytest.approx(0.1)
    constant = learning_rates(30, 30, warmup_steps=10, lr_scheduler="constant")
    assert constant[5] == pytest.approx(0.5) and constant[10:] == [1.0] * 20
    linear = learning_rates(111, 110, warmup_steps=10, lr_scheduler="linear")
    assert linear[5] == pytest.approx(0.5) and linear[60] == pytest.approx(0.5) and linear[110] == 0
    by_share = learning_rates(101, 100, warmup_steps=7, warmup_ratio=0.2, lr_scheduler="linear")
    assert by_share[10] == pytest.approx(0.5) and by_share[20] == 1 and by_share[60] == pytest.approx(0.5)


def test_a_run_given_minutes_anneals_over_its_minutes():
    """With `max_minutes` the decay ends with the time budget, whichever of it and the steps runs out first; the
    warmup can be a share of that budget too. Each step here takes 6 s of a 10-minute budget (100 steps)."""
    clock = {"seconds": 0.0}
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    config = TrainingConfig(lr_scheduler="linear", warmup_ratio=0.1, max_minutes=10, max_steps=10_000)
    scheduler = make_scheduler(optimizer, config, 10_000, elapsed_seconds=lambda: clock["seconds"])
    rates = []
    for _ in range(101):
        rates.append(scheduler.get_last_lr()[0])
        optimizer.step()
        clock["seconds"] += 6.0
        scheduler.step()
    assert rates[5] == pytest.approx(0.5) and rates[10] == pytest.approx(1.0)
    assert rates[55] == pytest.approx(0.5) and rates[100] == 0
    cosine = TrainingConfig(lr_scheduler="cosine", warmup_steps=0, min_lr_ratio=0.1, max_minutes=10)
    clock["seconds"] = 300.0
    assert make_scheduler(optimizer, cosine, 10**6, lambda: clock["seconds"]).lr_lambdas[0](1) == pytest.approx(0.55)
    steps_first = TrainingConfig(lr_scheduler="linear", warmup_steps=0, max_minutes=10)
    assert make_scheduler(optimizer, steps_first, 4, lambda: clock["seconds"]).lr_lambdas[0](3) == pytest.approx(0.25)


def test_a_budgeted_run_shows_the_steps_its_budget_holds():
    """The progress bar's total: the steps the time left holds at the rate so far, never past `total_steps`; all of
    them without a budget (a 30-minute recipe over data for 20 hours showed 20 hours left)."""
    assert final_step(100, 112_900, 60.0, 1800.0) == 3000  # 100 steps a minute, 29 minutes left
    assert final_step(100, 1_000, 60.0, 1800.0) == 1_000
    assert final_step(3_000, 112_900, 1800.5, 1800.0) == 3_000  # the budget spent: this step is the last
    assert final_step(100, 112_900, 60.0, math.inf) == final_step(0, 112_900, 0.0, 1800.0) == 112_900


def test_train_weights_name_training_corpora(tmp_path):
    files = ["data/tatoeba/train.jsonl.gz", "data/news/train.jsonl.gz", "mine=extra.tsv"]
    config = TrainingConfig(train_files=files, train_weights={"tatoeba": "4", "mine": 0.5})
    assert config.corpus_weights() == [4.0, 1.0, 0.5]
    with pytest.raises(ValueError, match=r"names 'wiki', which is not a training corpus: .*'mine', 'news', 'tatoeba'"):
        TrainingConfig(train_files=files, train_weights={"wiki": 2})
    with pytest.raises(ValueError, match=r"train_weights.news=0.0 is out of range: it must be > 0"):
        TrainingConfig(train_files=files, train_weights={"news": 0})
    with pytest.raises(ValueError, match="give train_files"):
        TrainingConfig(train_weights={"news": 2})
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("train_weights: {tatoeba: 4}\n")
    config = resolve_config(["--config", str(recipe), "--train-files", *files, "--train-weights", "news=2"])
    assert config.train_weights == {"tatoeba": 4.0, "news": 2.0}


# --- bad input --------------------------------------------------------------------------------------------------------


def write_jsonl(path: Path, rows: list[str]) -> str:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
    return str(path)


def test_malformed_line_names_file_and_line(tmp_path):
    good = [json.dumps({"en": f"I have {i} cats.", "zh": f"我有{i}只猫。"}, ensure_ascii=False) for i in range(30)]
    corpus = write_jsonl(tmp_path / "train.jsonl.gz", good[:5] + ['{"en": "broken'] + good[5:])
    config = resolve_config(["--train-files", corpus, "--output-dir", str(tmp_path / "out"), *TINY])
    with pytest.raises(ValueError, match=r"train\.jsonl\.gz.*line 6.*--skip-malformed"):
        train(config)


def test_missing_column_lists_the_columns_found(tmp_path):
    corpus = write_jsonl(tmp_path / "train.jsonl.gz", [json.dumps({"english": "Hi.", "chinese": "你好。"})] * 20)
    config = resolve_config(["--train-files", corpus, "--output-dir", str(tmp_path / "out"), *TINY])
    with pytest.raises(ValueError, match=r"(?s)english.*chinese.*--en-column"):
        train(config)


def test_unwritable_output_dir_fails_before_training(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(PermissionError, match="Cannot write to output_dir"):
        train(resolve_config(["--output-dir", str(blocker / "run"), *TINY]))


def test_existing_checkpoints_are_never_overwritten_without_resume(tmp_path):
    (tmp_path / "checkpoints" / "checkpoint-5").mkdir(parents=True)
    (tmp_path / "checkpoints" / "checkpoint-5" / "trainer_state.json").write_text("{}")
    with pytest.raises(FileExistsError, match="--resume"):
        train(resolve_config(["--output-dir", str(tmp_path), *TINY]))


# --- checkpoints ------------------------------------------------------------------------------------------------------


class FakeAccelerator:
    is_main_process = True

    def __init__(self, fail=False):
        self.fail = fail

    def wait_for_everyone(self):
        pass

    def save_state(self, directory):
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / "model.safetensors").write_bytes(b"partial")
        if self.fail:
            raise KeyboardInterrupt("killed while saving")


def test_a_crash_while_saving_leaves_earlier_checkpoints_intact(tmp_path):
    for step in (10, 20, 30):
        save_checkpoint(FakeAccelerator(), tmp_path, step, {"step": step}, keep=2)
    assert list(checkpoint_steps(tmp_path)) == [20, 30]
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(FakeAccelerator(fail=True), tmp_path, 40, {"step": 40}, keep=2)
    assert latest_checkpoint(tmp_path).name == "checkpoint-30"
    assert list(checkpoint_steps(tmp_path)) == [20, 30]
    save_checkpoint(FakeAccelerator(), tmp_path, 40, {"step": 40}, keep=2)  # the leftover temporary is cleared
    assert list(checkpoint_steps(tmp_path)) == [30, 40] and not list(tmp_path.glob(".*"))


def test_average_checkpoints(tmp_path):
    for i, value in enumerate([1.0, 2.0, 6.0]):
        (tmp_path / f"c{i}").mkdir()
        save_file(
            {"w": torch.full((2, 2), value), "b": torch.tensor([value])}, tmp_path / f"c{i}" / "model.safetensors"
        )
    averaged = average_checkpoints([tmp_path / f"c{i}" for i in range(3)])
    torch.testing.assert_close(averaged["w"], torch.full((2, 2), 3.0))
    torch.testing.assert_close(averaged["b"], torch.tensor([3.0]))


# --- end to end -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mixed_precision,cpu_bf16,runs_in",
    [("no", "emulated", "no"), ("bf16", "native", "bf16"), ("bf16", "emulated", "bf16"), ("auto", "native", "bf16"),
     ("auto", "emulated", "no")],
)  # fmt: skip
def test_sample_recipe_end_to_end_on_every_cpu(tmp_path, mixed_precision, cpu_bf16, runs_in):
    """The README's first command (the bundled sample recipe, shortened, its batches halved) on a CPU with and without
    native bf16 and under each `--mixed-precision`: training, validation loss and BLEU (translating under the training
    precision), checkpoint and export, whose model loads with the Auto classes and translates."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    import zhen

    args = ["--output-dir", str(tmp_path), "--max-steps", "8", "--eval-steps", "4", "--save-steps", "8", "--max-tokens",
            "512", "--eval-bleu-samples", "8", "--mixed-precision", mixed_precision, "--cpu"]  # fmt: skip
    with hardware.forced(cpu_bf16=cpu_bf16):
        export = train(resolve_config(args))
    assert AcceleratorState().mixed_precision == runs_in
    assert export == tmp_path / "model"
    exported = ("model.safetensors", "config.json", "generation_config.json", "tokenizer.json", "training_config.json",
                "README.md", "training_curve.png", "modeling_zhen.py", "pipeline_zhen.py")  # fmt: skip
    for name in exported:
        assert (export / name).is_file(), name
    resolved = json.loads((tmp_path / "training_config.json").read_text())
    assert resolved["max_steps"] == 8 and resolved["tokenizer"] == str(tmp_path / "tokenizer")
    history = json.loads((tmp_path / "history.json").read_text())
    evals = [h for h in history if h["type"] == "eval"]
    assert [h["step"] for h in evals] == [4, 8] and "sample/en-zh/bleu" in evals[0]
    assert evals[1]["loss"] < evals[0]["loss"]
    assert "zhen_packed_sdpa" not in (export / "config.json").read_text()  # the fast path is not exported

    model = AutoModelForSeq2SeqLM.from_pretrained(export)
    tokenizer = AutoTokenizer.from_pretrained(export)
    assert isinstance(model, zhen.ZhenForConditionalGeneration) and isinstance(tokenizer, zhen.ZhenTokenizerFast)
    assert model.generation_config.num_beams == 4
    [output] = zhen.translate(["I like tea."], model=model, tokenizer=tokenizer, src_lang="en", tgt_lang="zh")
    assert isinstance(output, str)


@pytest.mark.parametrize("flags,cuda_graphs", [([], None), (["--no-cuda-graphs"], False)])
def test_the_training_path_is_chosen_for_the_device_training_runs_on(tmp_path, monkeypatch, flags, cuda_graphs):
    """zhen-train builds the model on the CPU and Accelerate moves it: the fast path is told the device it will train
    on (on a GPU the plain model in CUDA graphs, not the CPU's packed path), and whether CUDA graphs may be used."""
    import zhen.training

    class Stop(Exception):
        pass

    def switched_on(model, **options):
        made.append(options)
        raise Stop

    made = []
    monkeypatch.setattr(zhen.training, "FastTraining", switched_on)
    with pytest.raises(Stop):
        train(resolve_config(["--output-dir", str(tmp_path), *TINY, "--cpu", *flags]))
    [options] = made
    assert options["device"] == AcceleratorState().device and options["cuda_graphs"] is cuda_graphs


def test_train_weights_set_each_corpus_share_of_an_epoch(tmp_path, caplog):
    """Two corpora, the first weighted 3x and the second 0.5x: every epoch's batches hold each example of the first
    three times and half of the second, a different half each epoch; the run trains and anneals over its minutes."""
    from zhen.data import load_sample
    from zhen.training import ZhenTrainer, build_model, check_output_dir, make_accelerator, prepare_data

    pairs = load_sample("train")
    for name, part in (("everyday", pairs.select(range(0, 300))), ("more", pairs.select(range(300, 500)))):
        (tmp_path / name).mkdir()
        part.to_json(tmp_path / name / "train.jsonl", force_ascii=False)
    args = ["--train-files", str(tmp_path / "everyday" / "train.jsonl"), str(tmp_path / "more" / "train.jsonl"),
            "--train-weights", "everyday=3", "more=0.5", "--output-dir", str(tmp_path / "run"), "--max-steps", "3",
            "--eval-steps", "3", "--save-steps", "3", "--lr-scheduler", "linear", "--warmup-ratio", "0.1",
            "--max-minutes", "5", *TINY]  # fmt: skip
    config = resolve_config(args)
    output_dir = check_output_dir(config)
    accelerator = make_accelerator(config)
    data, tokenizer = prepare_data(config, accelerator, output_dir)
    trainer = ZhenTrainer(config, accelerator, build_model(config, tokenizer), tokenizer, data, output_dir)
    corpus = np.asarray(data.train["corpus"])
    sizes = np.bincount(corpus)
    epochs = [np.concatenate(trainer.epoch_batches(epoch)) for epoch in range(2)]
    for epoch in epochs:
        assert np.bincount(corpus[epoch]).tolist() == [3 * sizes[0], round(0.5 * sizes[1])]
        assert set(np.bincount(epoch[corpus[epoch] == 0])[corpus == 0]) == {3}
    assert set(epochs[0][corpus[epochs[0]] == 1]) != set(epochs[1][corpus[epochs[1]] == 1])
    assert trainer.describe_epoch_mix().startswith(f"An epoch holds everyday 3x ({3 * sizes[0]:,} examples), more 0.5x")
    trainer.fit()
    assert trainer.state.step == 3 and trainer.scheduler.get_last_lr()[0] == 0  # the run ended at its last step
    assert not fast_generation._COPIES.get(accelerator.unwrap_model(trainer.model))  # validation kept no copies


def test_a_model_with_a_deeper_encoder_than_decoder_trains_and_exports(tmp_path):
    """As the `small` preset (6 encoder, 3 decoder layers): the whole run, fast path included."""
    args = ["--output-dir", str(tmp_path), *TINY, "--max-steps", "4", "--eval-steps", "4", "--eval-bleu-samples", "4",
            "--model-overrides", "d_model=64", "encoder_layers=3", "decoder_layers=1"]  # fmt: skip
    export = train(resolve_config(args))
    config = json.loads((export / "config.json").read_text())
    assert (config["encoder_layers"], config["decoder_layers"]) == (3, 1)


def test_validation_bleu_uses_the_current_weights(tmp_path):
    """The BLEU of an evaluation is the BLEU of the weights at that step: a run resumed from a checkpoint records the
    same BLEU at the next evaluation as the uninterrupted run (they hold identical parameters there)."""
    common = [*TINY, "--max-steps", "12", "--save-steps", "6", "--eval-steps", "6", "--eval-bleu-samples", "16",
              "--seed", "5"]  # fmt: skip
    train(resolve_config(["--output-dir", str(tmp_path / "straight"), *common]))
    AcceleratorState._reset_state(True)
    train(resolve_config(["--output-dir", str(tmp_path / "resumed"), *common, "--max-steps", "6"]))
    AcceleratorState._reset_state(True)
    train(resolve_config(["--output-dir", str(tmp_path / "resumed"), *common, "--resume"]))

    def evaluations(folder):
        history = json.loads((tmp_path / folder / "history.json").read_text())
        return {h["step"]: h for h in history if h["type"] == "eval"}

    straight, resumed = evaluations("straight"), evaluations("resumed")
    for key in ("sample/en-zh/bleu", "sample/zh-en/bleu", "sample/en-zh/chrf"):
        assert resumed[12][key] == pytest.approx(straight[12][key], abs=1e-9), key


def test_validation_translates_with_the_plain_modules_and_training_goes_on_with_the_fast_ones(tmp_path, monkeypatch):
    """The fast decoder makes session copies of `nn.Linear`s only: an evaluation's translation runs on the plain
    model (`FastTraining.paused`), whatever the training path swapped in (here oneDNN's float32 linears, forced), and
    training continues with them afterwards."""
    from zhen import training
    from zhen.fast_training import OneDnnLinear

    seen, translate = [], training.translate

    def recording_translate(*args, model, **kwargs):
        seen.append({type(m).__name__ for m in model.modules()})
        return translate(*args, model=model, **kwargs)

    monkeypatch.setattr(training, "translate", recording_translate)
    forward, after = OneDnnLinear.forward, []
    monkeypatch.setattr(OneDnnLinear, "forward", lambda self, x: after.append(len(seen)) or forward(self, x))
    args = [*TINY, "--max-steps", "4", "--eval-steps", "2", "--eval-bleu-samples", "4", "--mixed-precision", "no"]
    with hardware.forced(float32_training="onednn", onednn_packing="on"):
        train(resolve_config(["--output-dir", str(tmp_path / "run"), *args]))
    assert seen and all("Linear" in names and not {"OneDnnLinear", "CpuDropout"} & names for names in seen)
    assert len(seen) == 4 and max(after) == 2  # steps 3 and 4 through OneDnnLinear, after step 2's translations


def run_training(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "zhen.commands.train", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


def test_resume_after_kill_reaches_the_same_parameters(tmp_path):
    """A run killed with SIGKILL and resumed ends with exactly the parameters of an uninterrupted run (CPU,
    deterministic kernels, same data order from the seed, RNG restored from the checkpoint)."""
    common = [*TINY, "--max-steps", "40", "--save-steps", "5", "--eval-steps", "100", "--eval-bleu-samples", "0",
              "--warmup-steps", "10", "--seed", "3", "--cpu"]  # fmt: skip
    reference = run_training(["--output-dir", str(tmp_path / "straight"), *common])
    interrupted_dir = tmp_path / "interrupted"
    interrupted = run_training(["--output-dir", str(interrupted_dir), *common])
    deadline = time.monotonic() + 300
    while not checkpoint_steps(interrupted_dir / "checkpoints"):
        assert interrupted.poll() is None, interrupted.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.2)
    os.kill(interrupted.pid, signal.SIGKILL)
    interrupted.wait()
    killed_at = max(checkpoint_steps(interrupted_dir / "checkpoints"))
    assert killed_at < 40
    resumed = run_training(["--output-dir", str(interrupted_dir), *common, "--resume"])
    assert resumed.wait() == 0, resumed.stderr.read()
    assert reference.wait() == 0, reference.stderr.read()

    straight = load_file(tmp_path / "straight" / "checkpoints" / "checkpoint-40" / "model.safetensors")
    after_resume = load_file(interrupted_dir / "checkpoints" / "checkpoint-40" / "model.safetensors")
    assert straight.keys() == after_resume.keys()
    for name in straight:
        assert torch.equal(straight[name], after_resume[name]), name


def test_two_process_ddp_equals_gradient_accumulation_on_one_process(tmp_path):
    """`torchrun --standalone --nproc_per_node 2` (gloo DDP on the CPU, on a free port: test workers run side by side)
    gives process r the batches r, r+2, ...; one process (this one) with 2 accumulation steps sees the same pairs of
    batches in each step. With exact token-level loss normalisation across processes the two runs must take the same
    steps."""
    common = [*TINY, "--max-steps", "8", "--save-steps", "8", "--eval-steps", "100", "--eval-bleu-samples", "0",
              "--dropout", "0", "--warmup-steps", "4", "--logging-steps", "4", "--cpu"]  # fmt: skip
    ddp = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         "-m", "zhen.commands.train", "--output-dir", str(tmp_path / "ddp"), *common],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert ddp.returncode == 0, ddp.stderr[-3000:]
    train(resolve_config(["--output-dir", str(tmp_path / "ga"), *common, "--gradient-accumulation-steps", "2"]))

    ddp_dir, ga_dir = tmp_path / "ddp", tmp_path / "ga"
    assert sorted(p.name for p in (ddp_dir / "checkpoints" / "checkpoint-8").glob("random_states_*")) == [
        "random_states_0.pkl",
        "random_states_1.pkl",
    ]
    losses = [[h["loss"] for h in json.loads((d / "history.json").read_text())] for d in (ddp_dir, ga_dir)]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
    a = load_file(ddp_dir / "checkpoints" / "checkpoint-8" / "model.safetensors")
    b = load_file(ga_dir / "checkpoints" / "checkpoint-8" / "model.safetensors")
    for name in a:  # float summation order differs (all-reduce vs accumulation); Adam amplifies it slightly
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-3, msg=name)
