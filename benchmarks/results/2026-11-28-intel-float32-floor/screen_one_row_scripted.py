import sys, torch, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import checkpoint_and_pairs, best_us
from typing import Optional
from zhen.fast_generation import FastDecoder
from zhen import screened_argmax as sa
m, tok, rows = checkpoint_and_pairs(sys.argv[1])

def one_row(row: torch.Tensor, int8_weight: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], scale: float,
            max_error_l2: float, half_max_l1: float, max_l2: float, max_weight: float, banned: Optional[int],
            chunk: int, max_blocks: int, slack: float, lowest: int) -> Optional[torch.Tensor]:
    magnitude = row.abs()
    l1 = float(magnitude.sum())
    step = max(float(magnitude.max()), 1.1754943508222875e-38) / 127
    quantized = torch.round(row / step)
    unit = step * scale
    estimate = torch._int_mm(quantized.to(torch.int8)[None], int8_weight)[0]
    if bias is not None:
        estimate = estimate + bias / unit
    if banned is not None:
        if estimate.dtype == torch.int32:
            estimate[banned] = lowest
        else:
            estimate[banned] = -float("inf")
    weight_error = min(l1 * scale / 2, float(row.norm()) * max_error_l2)
    hidden_error = min(step * half_max_l1, float((row - quantized * step).norm()) * max_l2)
    margin = (2 * slack * (weight_error + hidden_error) + 1e-5 * l1 * max_weight) / unit
    vocab = estimate.shape[0]
    if vocab % chunk:
        fill = float(lowest) if estimate.dtype == torch.int32 else -float("inf")
        estimate = torch.nn.functional.pad(estimate, [0, chunk - vocab % chunk], value=fill)
    blocks = estimate.view(-1, chunk)
    block_best = blocks.amax(-1)
    floor = float(block_best.max()) - margin
    kept = (block_best >= floor).nonzero()[:, 0]
    if not (0 < len(kept) and len(kept) <= max_blocks):
        return None
    found = (blocks[kept] >= floor).nonzero()
    block, position = found[:, 0], found[:, 1]
    token = kept[block] * chunk + position
    logits = (row * weight[token]).sum(-1)
    if bias is not None:
        logits += bias[token]
    return token[logits.argmax()].view(1)

scripted = torch.jit.script(one_row)
tok.src_lang = "en"
enc = tok([rows[3]["en"]], return_tensors="pt")
with torch.inference_mode(), FastDecoder(m) as dec:
    steps = dec.decoder_steps(enc["input_ids"], enc["attention_mask"], 1, 40)
    s = steps.lm_head.screen
    torch.manual_seed(0)
    hs = [steps.step(torch.tensor([t]), p)[0] for p, t in enumerate([5, 10, 20, 30, 40, 50])]
    args = lambda h: (h, s.int8_weight, s.weight, s.bias, s.scale, s.max_error_l2, s.half_max_l1, s.max_l2, s.max_weight, None, sa.CHUNK, sa.MAX_CANDIDATE_BLOCKS, sa.SLACK, sa.LOWEST)
    for h in hs:
        a, b, c = s.one_row(h, None), scripted(*args(h)), one_row(*args(h))
        assert torch.equal(a, b) and torch.equal(a, c), (a, b, c)
    h = hs[3]
    with torch.jit.optimized_execution(False):
        print("python method us", best_us(lambda: s.one_row(h, None), 500))
        print("scripted us", best_us(lambda: scripted(*args(h)), 500))
