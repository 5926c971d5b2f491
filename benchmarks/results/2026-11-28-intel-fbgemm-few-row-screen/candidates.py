"""Candidate blocks per row of the screen's few-row path with 8-bit hidden values (`_int_mm`) and 7-bit ones (the FBGEMM
path), on the hidden states of real greedy steps (4 texts a call); the prototype had no `FEW_ROWS_MIN_WEIGHT`."""
import sys, time
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import checkpoint_and_pairs
import zhen, torch
import zhen.screened_argmax as sa
sa.FEW_ROWS_MIN_WEIGHT = 0  # as the prototype: the 7-bit path at any weight size
model, tok, rows = checkpoint_and_pairs(sys.argv[1], 32)
texts = [r["en"] for r in rows]
captured = []
orig = sa.ScreenedArgmax.many_rows
def cap(self, hidden, banned):
    captured.append((self, hidden.clone(), banned))
    return orig(self, hidden, banned)
sa.ScreenedArgmax.many_rows = cap
sa.FEW_ROWS = 0
for i in range(0, 32, 4):
    zhen.translate(texts[i:i+4], model, tok, src_lang="en", tgt_lang="zh", num_beams=1)
sa.ScreenedArgmax.many_rows = orig
# count candidates by intercepting nonzero sizes: recompute margins via a copy of the logic
orig_nonzero = torch.Tensor.nonzero
for few in (0, 8):
    sa.FEW_ROWS = few
    total_blocks = 0
    start = time.perf_counter()
    with torch.inference_mode():
        for screen, h, b in captured:
            screen.many_rows(h, b)
    t = time.perf_counter() - start
    # candidate blocks: rerun pieces
    n = 0
    for screen, h, b in captured[:200]:
        packed = screen.fbgemm_weight if len(h) <= sa.FEW_ROWS else None
        levels = 127 if packed is None else sa.FBGEMM_LEVELS
        step = h.abs().amax(-1, keepdim=True) / levels
        q = torch.round(h / step)
        est = torch._int_mm(q.to(torch.int8), screen.int8_weight).float()
        unit = step * screen.scale
        l1 = h.abs().sum(-1, keepdim=True)
        we = torch.minimum(l1 * (screen.scale / 2), h.norm(dim=-1, keepdim=True) * screen.max_error_l2)
        he = torch.minimum(step * screen.half_max_l1, (h - q * step).norm(dim=-1, keepdim=True) * screen.max_l2)
        margin = (2 * sa.SLACK * (we + he) + 1e-5 * l1 * screen.max_weight) / unit
        if screen.bias is not None: est = est + screen.bias / unit
        bb = sa._blocks(est).amax(-1)
        n += int((bb >= bb.amax(-1, keepdim=True) - margin).sum())
    print(f"FEW_ROWS {few}: {len(captured)} screens; candidate blocks per row (first 200 screens) {n / sum(len(h) for _, h, _ in captured[:200]):.2f}")
