import sys, torch
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.data import load_sample
from zhen.tokenizer_training import train_tokenizer
tok = train_tokenizer(load_sample("train"), vocab_size=8000, show_progress=False)
cfg = ZhenConfig.from_preset("base", vocab_size=len(tok))
torch.manual_seed(0)
model = ZhenForConditionalGeneration(cfg).eval()
model.save_pretrained("/tmp/ckbase"); tok.save_pretrained("/tmp/ckbase")
sample = load_sample("train")
with open("/tmp/en2k.txt", "w") as f:
    for i in range(2048): f.write(sample[i % len(sample)]["en"] + "\n")
print(len(tok), cfg.d_model, len(sample))
