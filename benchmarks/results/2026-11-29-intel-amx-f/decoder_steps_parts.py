import sys, time, warnings, statistics
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg, zhen.layer_steps as ls
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
tok = ZhenTokenizerFast.from_pretrained(sys.argv[1])
text = "The quick brown fox jumps over the lazy dog near the river bank."
zhen.translate(text, m, tok, src_lang="en", tgt_lang="zh")
enc = tok(text, return_tensors="pt"); ids, mask = enc["input_ids"], enc["attention_mask"]
def b(f, n=200):
    ts = []
    for _ in range(n):
        s = time.perf_counter(); f(); ts.append(time.perf_counter() - s)
    return statistics.median(ts) * 1e6
with torch.inference_mode(), fg.FastDecoder(m) as d:
    states = d.encode(ids, mask, True)
    print("decoder_steps", b(lambda: d.decoder_steps(ids, mask, 1, 30)))
    print("encode", b(lambda: d.encode(ids, mask, True)))
    print("layer_steps (cached in session)", b(lambda: d.layer_steps(True)))
    print("encoder_steps (cached in session)", b(lambda: d.encoder_steps(ids.device)))
    print("kept_steps decoder", b(lambda: ls.kept_steps(m.get_decoder(), m, True)))
    print("sources(decoder) walk", b(lambda: ls.sources(m.get_decoder())))
    print("sources(encoder) walk", b(lambda: ls.sources(m.get_encoder())))
    print("inline_layers_work", b(lambda: fg.inline_layers_work(m)))
    with torch.autocast("cpu", torch.bfloat16):
        print("source kv x layers", b(lambda: [l.encoder_attn.source_keys_and_values(states, None) for l in m.get_decoder().layers]))
        print("DecoderSteps init", b(lambda: fg.DecoderSteps(m, states, mask, 1, 30, torch.float32, d.workspace, d.layer_steps(True))))
import cProfile, pstats
with torch.inference_mode(), fg.FastDecoder(m) as d:
    states = d.encode(ids, mask, True)
    pr = cProfile.Profile(); pr.enable()
    for _ in range(300): d.decoder_steps(ids, mask, 1, 30)
    pr.disable(); pstats.Stats(pr).sort_stats("tottime").print_stats(30)
