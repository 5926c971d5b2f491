import torch
from zhen import ZhenConfig, ZhenForConditionalGeneration, ZhenTokenizerFast
tok = ZhenTokenizerFast.from_pretrained("/tmp/p/tok")
cfg = ZhenConfig.from_preset("base", vocab_size=len(tok))
torch.manual_seed(0)
m = ZhenForConditionalGeneration(cfg).eval()
print(m.generation_config)
m.save_pretrained("/tmp/p/base-random"); tok.save_pretrained("/tmp/p/base-random")
print(cfg.d_model, cfg.encoder_layers, cfg.decoder_layers, cfg.vocab_size)
