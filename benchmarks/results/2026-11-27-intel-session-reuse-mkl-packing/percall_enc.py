import sys
import zhen.fast_generation as fg
from probes import alternate_per_call, checkpoint_and_pairs
m, tok, rows = checkpoint_and_pairs(sys.argv[1])
program = fg.FastDecoder.encoder_steps
forwards = lambda self, device: None
for beams in (1, 4):
    for src, tgt in (("en", "zh"), ("zh", "en")):
        texts = [r[src] for r in rows]
        res = alternate_per_call(fg.FastDecoder, "encoder_steps", {"forwards": forwards, "program": program}, texts,
                                 model=m, tokenizer=tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
        print(src, tgt, "beams", beams, res, flush=True)
