"""The small-cpu recipe's step (768-token batches, float32) with its packed attention in 4 (default), 2 or 1 groups,
by two matmuls and a softmax (the default here) or SDPA: forward + backward of the same 30 batches, taking turns.

    python groups_ab.py OUTPUT_DIR TOKENIZER
"""
import sys, time, statistics
import torch
from zhen.training_config import make_config
from zhen import training
from zhen.data import prepare_data

out, tokenizer = sys.argv[1], sys.argv[2]
config = make_config(dict(
    train_files=["../shared/data/tatoeba/train.jsonl.gz", "../shared/data/news/train.jsonl.gz"],
    train_weights={"tatoeba": 4.0}, valid_files=["tatoeba=../shared/data/tatoeba/valid.jsonl.gz"],
    output_dir=out, tokenizer=tokenizer, max_steps=100000, eval_steps=100000, save_steps=100000), "small-cpu")
accelerator = training.make_accelerator(config)
training.set_seed(config.seed)
data, tok = prepare_data(config, accelerator, training.check_output_dir(config))
training.set_seed(config.seed)
model = training.build_model(config, tok)
trainer = training.ZhenTrainer(config, accelerator, model, tok, data, training.Path(out))
model = trainer.model
model.train()
windows = trainer.windows()
batches = [trainer.collate(trainer.data.train[next(windows)[0]]) for _ in range(30)]
variants = [(4, "matmul"), (2, "matmul"), (1, "matmul"), (4, "sdpa"), (1, "sdpa")]
def run(groups, kernel):
    trainer.fast.attention_groups, trainer.fast.attention_kernel = groups, kernel
    start = time.perf_counter()
    for b in batches:
        n = torch.tensor(float(b["labels"].ne(-100).sum()))
        trainer.fast.loss(model, b, num_items_in_batch=n).backward()
        model.zero_grad(set_to_none=True)
    return time.perf_counter() - start
for v in variants: run(*v)
T = {v: [] for v in variants}
for r in range(6):
    for v in (variants if r % 2 else variants[::-1]):
        T[v].append(run(*v))
base = T[variants[0]]
for v, t in T.items():
    ratios = [b / x for b, x in zip(base, t)]
    print(v, "median %.3f s  min %.3f s  speed vs default: median per turn %.3f" % (statistics.median(t), min(t), statistics.median(ratios)))
