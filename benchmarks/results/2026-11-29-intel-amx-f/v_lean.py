import sys
sys.path.insert(0, "benchmarks/results/2026-11-29-intel-amx-f/lean")
import lean_steps
from zhen import layer_steps
orig = layer_steps.decoder_layer_steps
def use_orig(): layer_steps.decoder_layer_steps = orig
def use_lean(): layer_steps.decoder_layer_steps = lean_steps.decoder_layer_steps
VARIANTS = {"orig": use_orig, "lean": use_lean}
