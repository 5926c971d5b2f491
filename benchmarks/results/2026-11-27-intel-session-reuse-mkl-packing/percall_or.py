import sys
import zhen.screened_argmax as sa
from probes import alternate_per_call, checkpoint_and_pairs
m, tok, rows = checkpoint_and_pairs(sys.argv[1])
fast = sa.ScreenedArgmax.one_row
plain = lambda self, row, banned: self.many_rows(row[None], banned)
for src, tgt in (("en", "zh"), ("zh", "en")):
    texts = [r[src] for r in rows]
    res = alternate_per_call(sa.ScreenedArgmax, "one_row", {"many_rows": plain, "one_row": fast}, texts,
                             model=m, tokenizer=tok, src_lang=src, tgt_lang=tgt, num_beams=1)
    print(src, tgt, res)
