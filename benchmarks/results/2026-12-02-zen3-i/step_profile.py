"""Where a step of the README's small-cpu recipe goes (768-token batches, float32 on a CPU without bf16): the trainer
as zhen-train builds it, N steps timed by part, then torch.profiler by op.

    python step_profile.py OUTPUT_DIR TOKENIZER [STEPS]
"""
import sys, time, logging
import torch
from zhen.training_config import make_config
from zhen import training
from zhen.data import prepare_data

out, tokenizer = sys.argv[1], sys.argv[2]
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 60
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
print(trainer.fast.describe())
model = trainer.model
model.train()
windows = trainer.windows()
for _ in range(10):
    trainer.train_step(next(windows))
parts = dict(collate=0.0, forward=0.0, backward=0.0, clip=0.0, optimizer=0.0, total=0.0)
tokens = 0
for _ in range(steps):
    window = next(windows)
    t0 = time.perf_counter()
    batches = [trainer.collate(trainer.data.train[i]) for i in window]
    t1 = time.perf_counter()
    n = sum(int(b["labels"].ne(-100).sum()) for b in batches)
    loss = trainer.fast.loss(model, batches[0], num_items_in_batch=torch.tensor(float(n)))
    t2 = time.perf_counter()
    accelerator.backward(loss)
    t3 = time.perf_counter()
    accelerator.clip_grad_norm_(model.parameters(), config.max_grad_norm)
    t4 = time.perf_counter()
    trainer.optimizer.step(); trainer.scheduler.step(); trainer.optimizer.zero_grad(set_to_none=True)
    t5 = time.perf_counter()
    for k, v in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - t0)):
        parts[k] += v
    tokens += n
print({k: "%.1f ms" % (1000 * v / steps) for k, v in parts.items()}, "target tok/s %.0f" % (tokens / parts["total"]),
      "target tokens/step %.0f" % (tokens / steps))
from torch.profiler import profile
with profile() as p:
    for _ in range(15):
        trainer.train_step(next(windows))
print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=40, max_name_column_width=45))
