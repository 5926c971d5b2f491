"""What the probes here decode: the tiny size (d_model 256, 3+3 layers, vocab 16k) with random weights, float32 or
int8, and batches of 64 random sources (9–31 tokens, or all 20 with `fixed`)."""
import warnings

import torch

from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.quantization import quantize_dynamic

warnings.filterwarnings("ignore")
VARIED = (31, 27, 24, 21, 18, 15, 12, 9)


def tiny_model(mode: str, d: int = 256) -> ZhenForConditionalGeneration:
    config = ZhenConfig.from_preset("tiny", vocab_size=16000, d_model=d, encoder_ffn_dim=4 * d, decoder_ffn_dim=4 * d)
    model = ZhenForConditionalGeneration(config).eval()
    return quantize_dynamic(model) if mode == "int8" else model


def batches(fixed: bool = False) -> list:
    return [torch.randint(6, 16000, (64, length)) for length in ((20,) * 8 if fixed else VARIED)]


def translate(decoder, batch, beams: int):
    """32 new tokens a sentence, as `bench_generate.py` forces them."""
    return decoder.generate(batch, torch.ones_like(batch), forced_bos_token_id=5, max_new_tokens=32,
                            min_new_tokens=32, num_beams=beams)  # fmt: skip
