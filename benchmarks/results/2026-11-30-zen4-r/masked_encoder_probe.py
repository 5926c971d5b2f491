"""Padded batches of real text through the encoder: the packed forwards (zhen.translate's path today) against the
encoder's layers' program run on the padded batch with a key mask (one SDPA call a layer)."""
import os, sys, time, warnings, statistics, torch
from typing import Optional
from torch import nn
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_batches.py")).read())
import zhen.layer_steps as ls
from zhen.modeling_zhen import apply_rotary_pos_emb

class MaskedEncoderLayerStep(ls.EncoderLayerStep):
    def forward(self, hidden_states: torch.Tensor, cos: Optional[torch.Tensor], sin: Optional[torch.Tensor],
                mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        batch, length = hidden_states.shape[0], hidden_states.shape[1]
        projected = self.qkv_proj.project(hidden_states).view(batch, length, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        query, key, value = projected[0], projected[1], projected[2]
        output = nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=self.scaling)
        output = output.transpose(1, 2).contiguous().reshape(batch, length, -1).contiguous()
        hidden_states = residual + self.out_proj.project(output)
        if not self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        return self.feed_forward(hidden_states)

class MaskedEncoderSteps(ls.EncoderSteps):
    def __init__(self, encoder, products, sdpa):
        nn.Module.__init__(self)
        self.layers = nn.ModuleList(MaskedEncoderLayerStep(layer, products, sdpa) for layer in encoder.layers)
        self.layer_norm = encoder.layer_norm
    def forward(self, hidden_states: torch.Tensor, cos: Optional[torch.Tensor], sin: Optional[torch.Tensor],
                mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        for layer in self.layers:
            hidden_states = layer(hidden_states, cos, sin, mask)
        return self.layer_norm(hidden_states)

res = {"packed": [], "masked": []}
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    enc = q.get_encoder()
    for b in batches[:2]: s.encode(b["input_ids"], b["attention_mask"])
    products = {}
    for layer in enc.layers:
        for m in (layer.self_attn.qkv_proj, layer.self_attn.out_proj, layer.mlp):
            products[m] = ls.product_of(m)
    prog = torch.jit.script(MaskedEncoderSteps(enc, products, True)); ls.inline(prog)
    def masked(ids, am):
        pos = torch.arange(ids.shape[1])[None]
        h, _ = enc.embed(ids, None, pos)
        mask = am[:, None, None, :].bool()
        with torch.jit.optimized_execution(False):
            return prog(h, None, None, mask)
    for b in batches[:2]: masked(b["input_ids"], b["attention_mask"])
    pads = sum(int((b["attention_mask"] == 0).sum()) for b in batches) / sum(b["attention_mask"].numel() for b in batches)
    outs = {}
    for r in range(9):
        for k in (("packed", "masked") if r % 2 == 0 else ("masked", "packed")):
            t = time.perf_counter()
            if k == "packed":
                outs[k] = [s.encode(b["input_ids"], b["attention_mask"]) for b in batches]
            else:
                outs[k] = [masked(b["input_ids"], b["attention_mask"]) for b in batches]
            res[k].append(time.perf_counter() - t)
    diff = max(float(((a - c) * bb["attention_mask"][..., None]).abs().max()) for a, c, bb in zip(outs["packed"], outs["masked"], batches))
print(f"padding {pads:.1%}; " + ", ".join(f"{k} {statistics.median(v)*1e3:.1f} ms" for k, v in res.items()),
      "paired packed/masked", f"{statistics.median([a/b for a, b in zip(res['packed'], res['masked'])]):.3f}", "max diff on real tokens", diff)
