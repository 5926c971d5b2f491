"""Shared fixtures: a tiny trained zhen checkpoint that translates a few sample sentences exactly.

`tiny_model` memorises `TINY_PAIRS` in both directions (about 3 s of CPU), so tests can check real translations, BLEU
scores of 100 and attention maps of a model that does something. Treat the session fixtures as read-only; copy the
folder or reload the model to change them.
"""

import json
import os
import subprocess
import sys

import pytest
import torch
from accelerate.state import AcceleratorState

from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.data import load_sample
from zhen.tokenizer_training import train_tokenizer


# Tiny models run several times faster on one thread than on two contended ones; subprocesses inherit this too.
torch.set_num_threads(1)
os.environ.setdefault("OMP_NUM_THREADS", "1")

TINY_TRAINING_STEPS = 80


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: a worker per usable core (each runs on one thread), at most one per 2 GiB of memory and 8 in all."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    pages = "SC_PHYS_PAGES" in getattr(os, "sysconf_names", {})
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30 if pages else 16
    return max(1, min(cores, int(memory_gib // 2), 8))


@pytest.fixture(scope="session")
def tiny_pairs() -> list[tuple[str, str]]:
    """16 (en, zh) pairs of the sample corpus that `tiny_model` translates exactly."""
    sample = load_sample("train").select(range(16))
    return list(zip(sample["en"], sample["zh"]))


@pytest.fixture(scope="session")
def tiny_tokenizer():
    """A 600-token zhen tokenizer trained on 200 sample pairs."""
    return train_tokenizer(load_sample("train").select(range(200)), vocab_size=600, show_progress=False)


@pytest.fixture(scope="session")
def memorize(tiny_tokenizer, tiny_pairs):
    """`memorize(config)`: a model of `config` trained until it reproduces `tiny_pairs` in both directions (eval mode),
    so that generation ends with `</s>` at different steps in a batch and beams finish at different lengths."""
    en, zh = map(list, zip(*tiny_pairs))
    batches = [_batch(tiny_tokenizer, en, zh, "en", "zh"), _batch(tiny_tokenizer, zh, en, "zh", "en")]

    def train(config: ZhenConfig) -> ZhenForConditionalGeneration:
        torch.manual_seed(0)
        model = ZhenForConditionalGeneration(config)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        for step in range(TINY_TRAINING_STEPS):
            model(**batches[step % 2]).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        return model.eval()

    return train


@pytest.fixture(scope="session")
def tiny_model(memorize, tiny_tokenizer):
    """The `tiny` preset trained until it reproduces `tiny_pairs` in both directions (eval mode)."""
    return memorize(ZhenConfig.from_preset("tiny", vocab_size=len(tiny_tokenizer)))


def _batch(tokenizer, sources, targets, src_lang, tgt_lang):
    tokenizer.src_lang, tokenizer.tgt_lang = src_lang, tgt_lang
    batch = tokenizer(sources, text_target=targets, padding=True, return_tensors="pt")
    batch["labels"] = batch["labels"].masked_fill(batch["labels"] == tokenizer.pad_token_id, -100)
    tokenizer.src_lang, tokenizer.tgt_lang = "en", "zh"
    return batch


@pytest.fixture(scope="session")
def tiny_checkpoint(tiny_model, tiny_tokenizer, tmp_path_factory):
    """A folder with `tiny_model` and `tiny_tokenizer` saved by `save_pretrained` (not made Hub-ready)."""
    folder = tmp_path_factory.mktemp("tiny_zhen")
    tiny_model.save_pretrained(folder)
    tiny_tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_test_file(tiny_pairs, tmp_path_factory):
    """`tiny_pairs` as a JSON Lines test file."""
    import json

    path = tmp_path_factory.mktemp("tiny_data") / "test.jsonl"
    path.write_text("".join(json.dumps({"en": en, "zh": zh}, ensure_ascii=False) + "\n" for en, zh in tiny_pairs))
    return path


def _clean_accelerator_state():
    AcceleratorState._reset_state(True)
    yield
    AcceleratorState._reset_state(True)


@pytest.fixture
def fresh_accelerator_state():
    """Accelerate keeps process-wide state; each in-process run starts from a clean one."""
    yield from _clean_accelerator_state()


@pytest.fixture(scope="module")
def module_accelerator_state():
    """A clean Accelerate state once per module, for modules whose module-scoped Trainer needs the state it was built
    with."""
    yield from _clean_accelerator_state()


@pytest.fixture
def run_without_zhen(tmp_path):
    """`run(script, folder, texts)`: run `script` in a fresh Python with zhen not importable and `HF_HUB_OFFLINE=1`,
    with `folder` as its argument and `texts` as JSON on standard input; returns the JSON of its last output line,
    after checking that it loaded the model and pipeline classes as Hub custom code (`transformers_modules`)."""

    def run(script: str, folder, texts: list[str]) -> dict:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules")}
        env.pop("PYTHONPATH", None)
        result = subprocess.run(
            [sys.executable, "-c", script, str(folder)],
            input=json.dumps(texts),
            cwd=tmp_path,  # outside the repository, so that the checkout is not on sys.path either
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        remote = json.loads(result.stdout.strip().splitlines()[-1])
        assert all(module.startswith("transformers_modules") for module in remote["modules"])
        return remote

    return run


@pytest.fixture(scope="session")
def run_fresh_python():
    """`run(code, *args, env=None)`: the standard output of `code` run in a fresh Python, which must succeed, for probes
    of what a process decides at its start. `zhen`'s modules import there without `zhen/__init__.py`, whose model
    classes (Transformers' `PreTrainedModel`) would add several seconds to each probe: fine for modules, such as
    `zhen.hardware` and `zhen.screened_argmax`, that import no model."""
    import zhen

    package = (
        "import sys, types\n"
        "sys.modules['zhen'] = types.ModuleType('zhen')\n"
        f"sys.modules['zhen'].__path__ = {list(zhen.__path__)!r}\n"
    )

    def run(code: str, *args: str, env: dict | None = None) -> str:
        result = subprocess.run([sys.executable, "-c", package + code, *args], env=env, capture_output=True, text=True,
                                timeout=300)  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    return run
