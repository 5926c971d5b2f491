import time, statistics, torch
from zhen import ZhenForConditionalGeneration
from zhen.screened_argmax import ScreenedArgmax
from zhen.fast_generation import Bf16Linear
torch.set_num_threads(2)
model = ZhenForConditionalGeneration.from_pretrained("/tmp/s32/base/run/model").eval()
lin = model.lm_head
sc = ScreenedArgmax(lin); sc.fbgemm_weight
bf = Bf16Linear(lin)
flush = torch.randn(24 << 20)
torch.manual_seed(0)
# hidden states: decoder outputs for some random tokens are not available; use embeddings of likely tokens + noise
from zhen import ZhenTokenizerFast, translate, screened_argmax
saved = []
orig = screened_argmax.ScreenedArgmax.top_log_probs
def keep_args(self, hidden, running, k, banned=None):
    saved.append((hidden.clone(), running.clone()))
    return orig(self, hidden, running, k, banned)
screened_argmax.ScreenedArgmax.top_log_probs = keep_args
screened_argmax.PACK_AFTER = 0
tok = ZhenTokenizerFast.from_pretrained("/tmp/s32/base/run/model")
translate(["Tom was surprised that Mary knew the answer to the question."], model, tok, tgt_lang="zh", num_beams=4)
h, running = [s for s in saved if len(s[0]) == 4][3]
screened_argmax.ScreenedArgmax.top_log_probs = orig
def full():
    y = bf(h); return torch.log_softmax(y, -1)
def screen():
    return sc.top_log_probs(h, running, 8)
with torch.inference_mode():
    print("kept/row", torch.isfinite(screen()).sum().item() / 4)
    for name, f in (("bf16 head + log_softmax", full), ("screen", screen)):
        ts = []
        for i in range(80):
            flush.sum()
            t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
        print(name, round(statistics.median(ts[10:]) * 1e3, 3), "ms")
    from torch.profiler import profile
    for i in range(5): flush.sum(); screen()
    with profile() as p:
        for i in range(20):
            flush.sum(); screen()
    print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))

import zhen.screened_argmax as S
def sections(self, hidden, running_scores, keep, banned=None):
    T = [time.perf_counter()]
    rows = len(hidden)
    packed = self.fbgemm_weight
    estimate, unit, bound = self.estimates(hidden, packed, refined=True); T.append(time.perf_counter())
    estimate = estimate.to(torch.float32).mul_(unit)
    bound = bound * unit
    normalizer = torch.logsumexp(estimate, -1, keepdim=True)
    scores = estimate.sub_(normalizer); T.append(time.perf_counter())
    sentences = len(running_scores)
    row_scores = running_scores.reshape(rows, 1) if rows > sentences else running_scores.amax(1, keepdim=True)
    blocks = S._blocks(scores)
    block_best = blocks.amax(-1)
    kth_best = torch.topk((block_best + row_scores).view(sentences, -1), keep).values[:, -1:]
    widest = bound.view(sentences, -1).amax(-1, keepdim=True)
    floor = (kth_best - 4 * widest).repeat_interleave(rows // sentences, dim=0) - row_scores
    row_of, block_of = (block_best >= floor).nonzero(as_tuple=True); T.append(time.perf_counter())
    candidate, position = (blocks[row_of, block_of] >= floor[row_of]).nonzero(as_tuple=True)
    row_of, token = row_of[candidate], block_of[candidate] * S.CHUNK + position; T.append(time.perf_counter())
    shifted = self.logits_of(hidden, row_of, token) - normalizer[row_of, 0]
    zeros = torch.zeros(rows, device=hidden.device)
    others = (1 - zeros.index_add(0, row_of, scores[row_of, token].exp())).clamp_min_(0)
    correction = torch.log(others.index_add_(0, row_of, shifted.exp()))
    log_probs = scores.fill_(-torch.inf)
    log_probs[row_of, token] = shifted - correction[row_of]; T.append(time.perf_counter())
    return [b - a for a, b in zip(T, T[1:])]
with torch.inference_mode():
    res = []
    for i in range(60):
        flush.sum(); res.append(sections(sc, h, running, 8))
    print("sections (estimates, normalize, floor, candidates, logits+fill) us:", [round(statistics.median(r[j] for r in res[10:]) * 1e6) for j in range(5)])
    ts=[]
    for i in range(60):
        flush.sum(); t=time.perf_counter(); y = bf(h); ts.append(time.perf_counter()-t)
    print("bf16 product alone", round(statistics.median(ts[10:])*1e6))
    ts=[]
    y = bf(h)
    for i in range(60):
        t=time.perf_counter(); torch.log_softmax(y, -1); ts.append(time.perf_counter()-t)
    print("log_softmax alone", round(statistics.median(ts[10:])*1e6))
from zhen.screened_argmax import fbgemm_sums
with torch.inference_mode():
    q = torch.round(torch.cat([h, h]) / (h.abs().amax() / 63))
    ts = []
    for i in range(60):
        flush.sum(); t = time.perf_counter(); fbgemm_sums(q, sc.fbgemm_weight); ts.append(time.perf_counter() - t)
    print("fbgemm 8 rows alone cold", round(statistics.median(ts[10:]) * 1e6))
    ts = []
    for i in range(60):
        flush.sum(); t = time.perf_counter(); fbgemm_sums(q[:4], sc.fbgemm_weight); ts.append(time.perf_counter() - t)
    print("fbgemm 4 rows alone cold", round(statistics.median(ts[10:]) * 1e6))
    ts = []
    for i in range(60):
        t = time.perf_counter(); sc.estimates(h, sc.fbgemm_weight, refined=True); ts.append(time.perf_counter() - t)
    print("estimates warm", round(statistics.median(ts[10:]) * 1e6))
    ts = []
    for i in range(60):
        t = time.perf_counter(); fbgemm_sums(q, sc.fbgemm_weight); ts.append(time.perf_counter() - t)
    print("fbgemm 8 rows warm", round(statistics.median(ts[10:]) * 1e6))
