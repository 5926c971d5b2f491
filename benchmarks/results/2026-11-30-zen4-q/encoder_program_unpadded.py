import os, sys, time, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_tatoeba_batches.py")).read())
unp = [b for b in batches if bool(b["attention_mask"].all())]
print("unpadded batches:", len(unp), [tuple(b["input_ids"].shape) for b in unp])
if not unp:
    # make one: the 64 sentences of length 8
    same = [i for i in range(len(ids)) if len(ids[i]) == 9][:64]
    x = torch.tensor([ids[i] for i in same]); unp = [dict(input_ids=x, attention_mask=torch.ones_like(x))]
    print("made", x.shape)
b = unp[0]
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    t = time.perf_counter(); s.encode(b["input_ids"], b["attention_mask"], False, True); print(f"first (compiles): {1e3*(time.perf_counter()-t):.0f} ms")
    def run(): s.encode(b["input_ids"], b["attention_mask"], False, True)
    orig = s.encoder_steps
    for r in range(3):
        for name in ("program", "padded path"):
            s.encoder_steps = orig if name == "program" else (lambda *a, **k: None)
            for _ in range(2): run()
            t = time.perf_counter()
            for _ in range(10): run()
            print(name, f"{(time.perf_counter()-t)/10*1e3:.2f} ms")
