import sys, time
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import zhen, zhen.fast_generation as fg, zhen.translation as tr
from probes import checkpoint_and_pairs, timed
m, tok, rows = checkpoint_and_pairs(sys.argv[1]); import torch; torch.set_num_threads(int(sys.argv[3]))
beams = int(sys.argv[2])
texts = [r["en"] for r in rows]
T = {}
fg.FastDecoder.__enter__ = timed(T, "enter", fg.FastDecoder.__enter__)
fg.FastDecoder.__exit__ = timed(T, "exit", fg.FastDecoder.__exit__)
fg.FastDecoder.encode = timed(T, "encode", fg.FastDecoder.encode)
fg.FastDecoder.layer_steps = timed(T, "layer_steps", fg.FastDecoder.layer_steps)
fg.DecoderSteps.__init__ = timed(T, "DecoderSteps.init", fg.DecoderSteps.__init__)
fg.greedy_search = timed(T, "greedy", fg.greedy_search)
fg.beam_search = timed(T, "beam", fg.beam_search)
fg.FastDecoder.generate = timed(T, "generate", fg.FastDecoder.generate)
fg.DecoderSteps.step = timed(T, "step", fg.DecoderSteps.step)
fg.DecoderSteps.next_tokens = timed(T, "next_tokens", fg.DecoderSteps.next_tokens)
tok_call = type(tok).__call__
type(tok).__call__ = timed(T, "tokenize", tok_call)
type(tok).batch_decode = timed(T, "batch_decode", type(tok).batch_decode)
for t in texts[:8]: zhen.translate(t, m, tok, src_lang="en", tgt_lang="zh", num_beams=beams)
T.clear()
t0=time.perf_counter()
for t in texts: zhen.translate(t, m, tok, src_lang="en", tgt_lang="zh", num_beams=beams)
tot=(time.perf_counter()-t0)
print("total ms/call %.2f" % (tot/len(texts)*1000))
for k,v in T.items(): print(f"  {k:20s} {v/len(texts)*1000:.2f}")
