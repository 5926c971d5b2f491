import torch, json
from zhen import ZhenConfig, ZhenForConditionalGeneration, ZhenTokenizerFast
small = ZhenConfig.from_pretrained("/tmp/rt/small/model")
keep = {k: getattr(small, k) for k in ("vocab_size","pad_token_id","bos_token_id","eos_token_id","decoder_start_token_id","forced_eos_token_id") if hasattr(small, k)}
cfg = ZhenConfig.from_preset("base", **keep)
torch.manual_seed(0)
m = ZhenForConditionalGeneration(cfg).eval()
m.generation_config = ZhenForConditionalGeneration.from_pretrained("/tmp/rt/small/model").generation_config
m.save_pretrained("/tmp/p13/base-random")
ZhenTokenizerFast.from_pretrained("/tmp/rt/small/model").save_pretrained("/tmp/p13/base-random")
print(cfg.d_model, cfg.encoder_layers, cfg.decoder_layers, cfg.vocab_size)
