"""model.resize_token_embeddings from another thread while a FastDecoder session (packed float32 weights) is open."""
import threading, torch
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder
cfg = ZhenConfig(vocab_size=64, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=2)
torch.manual_seed(0); m = ZhenForConditionalGeneration(cfg).eval()
errors = []
def work():
    try:
        m.resize_token_embeddings(80)
    except Exception as e:
        errors.append(repr(e)[:300])
with FastDecoder(m, weights="packed"):
    t = threading.Thread(target=work); t.start(); t.join(1)
t.join()
print("errors:", errors)
print("vocab:", m.config.vocab_size, "input emb:", tuple(m.get_input_embeddings().weight.shape), "head:", tuple(m.get_output_embeddings().weight.shape),
      "tied:", m.get_output_embeddings().weight is m.get_input_embeddings().weight)
