"""Simulate prompt-lookup (n-gram) drafting of greedy batches' tails from the batch path's own outputs."""
import os, sys, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(2)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_tatoeba_batches.py")).read())
EOS = 2
def guess(seq, k, n):
    """Tokens after the last earlier occurrence of seq's last n tokens."""
    if len(seq) < n + 1: return []
    tail = seq[-n:]
    for i in range(len(seq) - n - 1, -1, -1):
        if seq[i:i + n] == tail:
            return seq[i + n:i + n + k]
    return []
tail_rows = int(sys.argv[2]); n = int(sys.argv[3]); K = int(sys.argv[4])
plain_steps = drafted_steps = 0; total_steps = 0
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for b in batches:
        out = s.generate(**b).tolist()
        seqs = []
        for r in out:
            r = r[1:]
            seqs.append(r[: r.index(EOS) + 1] if EOS in r else r)
        L = max(len(x) for x in seqs)
        total_steps += L
        # the step at which running rows <= tail_rows
        lengths = sorted(len(x) for x in seqs)
        start = lengths[-tail_rows - 1] if len(lengths) > tail_rows else 0  # positions before this: batch path
        plain_steps += L - start
        # drafted: sentences in step; each pass: guesses of up to k per unfinished row, accepted = min confirmed
        pos = start; k = 2
        alive = [x for x in seqs if len(x) > start]
        while pos < L:
            going = [x for x in alive if len(x) > pos]
            if not going: break
            gs = [guess(x[:pos], k, n) for x in going]
            if all(gs) and k > 0:
                m = min(len(g) for g in gs)
                acc = min(next((i for i in range(m) if g[i] != x[pos + i] if pos + i < len(x)), m) if True else 0 for g, x in zip(gs, going))
                # confirmed count per row
                accs = []
                for g, x in zip(gs, going):
                    c = 0
                    for i in range(m):
                        if pos + i < len(x) and g[i] == x[pos + i]: c += 1
                        else: break
                    accs.append(c)
                acc = min(accs)
                k = min(K, k + 2) if acc == m else max(1, k - 1)
                pos += acc + 1
            else:
                pos += 1
            drafted_steps += 1
print(f"tail <= {tail_rows} rows, n={n}, K={K}: batch steps {total_steps}, tail steps plain {plain_steps}, drafted {drafted_steps}")
