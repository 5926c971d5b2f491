import threading, torch
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder
cfg = ZhenConfig(vocab_size=64, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=2)
torch.manual_seed(0); m = ZhenForConditionalGeneration(cfg).eval()
torch.manual_seed(1); other = ZhenForConditionalGeneration(cfg).eval().state_dict()
with FastDecoder(m):
    t = threading.Thread(target=lambda: m.load_state_dict(other, strict=False)); t.start(); t.join(1)
t.join()
loaded = sum(torch.equal(v, other[k]) for k, v in m.state_dict().items())
print(f"load_state_dict(strict=False) from another thread during a session: {loaded} of {len(other)} tensors loaded")
