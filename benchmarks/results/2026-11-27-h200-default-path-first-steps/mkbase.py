import sys, torch
from zhen import ZhenConfig, ZhenForConditionalGeneration, ZhenTokenizerFast
from transformers import GenerationConfig
src, dst = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
m = ZhenForConditionalGeneration(ZhenConfig.from_pretrained(src)).eval()
m.generation_config = GenerationConfig.from_pretrained(src)
m.save_pretrained(dst)
ZhenTokenizerFast.from_pretrained(src).save_pretrained(dst)
print("base random", m.config.d_model, m.config.encoder_layers, m.config.decoder_layers, m.config.vocab_size)
