import os, sys, time, torch, warnings, collections
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    hit = 0; lens = []; tails = []
    for b in batches:
        out = dec.generate(**b)
        L = (out != tok.pad_token_id).sum(-1) 
        for row in out.tolist():
            n = len(row)
            while n > 1 and row[n-1] == tok.pad_token_id: n -= 1
            lens.append(n)
            if 2 not in row[1:]: hit += 1; tails.append(tok.decode(row[:40]))
        mx = max(lens[-len(out):]); srt = sorted(lens[-len(out):])
        print("batch max_new", b["max_new_tokens"], "longest out", mx, "2nd", srt[-2], "median", srt[len(srt)//2])
    print("hit limit", hit)
    for t in tails[:5]: print(t)
