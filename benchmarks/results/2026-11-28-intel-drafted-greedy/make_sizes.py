"""A random-weight model of base's recipe with other decoder sizes, saved with the 32k tokenizer (make_base.py of
2026-11-27-intel-no-bf16-screened-argmax). Usage: make_sizes.py DECODER_LAYERS D_MODEL FOLDER"""

import sys, torch
from zhen import ZhenConfig, ZhenForConditionalGeneration, ZhenTokenizerFast
tok = ZhenTokenizerFast.from_pretrained("/tmp/p/tok")
cfg = ZhenConfig.from_preset("base", vocab_size=len(tok), decoder_layers=int(sys.argv[1]), d_model=int(sys.argv[2]), decoder_ffn_dim=4*int(sys.argv[2]), encoder_ffn_dim=4*int(sys.argv[2]))
torch.manual_seed(0)
m = ZhenForConditionalGeneration(cfg).eval()
m.save_pretrained(sys.argv[3]); tok.save_pretrained(sys.argv[3])
print(sum(x.weight.numel() for x in m.get_decoder().modules() if type(x) is torch.nn.Linear) / 1e6)
