exec(open("benchmarks/results/2026-12-02-zen3-h/steptime.py").read().split("T = collections")[0])
rs = collections.Counter()
orig = ds.DecoderSteps.step
def step(self, tokens, position):
    rs[len(tokens)] += 1
    return orig(self, tokens, position)
ds.DecoderSteps.step = step
outs = list(dec.generate_batches(batches, 1))
total = sum(k * v for k, v in rs.items())
lens = sum(int((o[:, 1:] != tok.pad_token_id).sum()) for o in outs)
print("row-steps", total, "steps", sum(rs.values()), "output tokens (incl lang code, eos)", lens)
print(sorted(rs.items()))
