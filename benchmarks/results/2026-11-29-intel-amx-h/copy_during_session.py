"""copy.deepcopy and torch.save of a model from another thread while a FastDecoder session of it is open. Usage:
copy_during_session.py [auto|plain|packed|bf16]"""
import sys
import threading, torch, copy, io
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder
cfg = ZhenConfig(vocab_size=64, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=2)
torch.manual_seed(0); m = ZhenForConditionalGeneration(cfg).eval()
out = {}
def work():
    out["copy"] = copy.deepcopy(m)
    buf = io.BytesIO()
    try:
        torch.save(m, buf); buf.seek(0); out["pickled"] = torch.load(buf, weights_only=False)
    except Exception as e:
        out["pickled"] = e
with FastDecoder(m, weights=sys.argv[1] if len(sys.argv) > 1 else "auto"):
    t = threading.Thread(target=work); t.start(); t.join(1)
t.join()
for k, v in out.items():
    kinds = sorted({type(x).__name__ for x in v.modules()}) if isinstance(v, torch.nn.Module) else repr(v)[:200]
    attn = v.config._attn_implementation if isinstance(v, torch.nn.Module) else None
    print(k, kinds, 'attention:', attn)
