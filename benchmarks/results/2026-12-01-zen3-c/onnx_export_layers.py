import time, torch, tempfile, sys
from zhen import ZhenConfig, ZhenForConditionalGeneration
import zhen.onnx_export as ox
from zhen.tokenizer_training import train_tokenizer
from zhen.data import load_sample
tok = train_tokenizer(load_sample("train").select(range(200)), vocab_size=600, show_progress=False)
from torch.onnx._internal.exporter import _registration
t=time.perf_counter(); _registration.ONNXRegistry.from_torchlib(); print("registry", time.perf_counter()-t)
for layers in (2, 1, 2, 1):
    c = ZhenConfig.from_preset("tiny", vocab_size=len(tok), position_embedding_type="rope", encoder_layers=layers, decoder_layers=layers)
    m = ZhenForConditionalGeneration(c).eval()
    d = tempfile.mkdtemp()
    t = time.perf_counter()
    ox.export_onnx(m, d, tok)
    print(layers, "total", time.perf_counter()-t)
