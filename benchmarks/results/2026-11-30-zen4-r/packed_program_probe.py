"""The encoder of padded batches as one TorchScript program over the packed real tokens (zhen.packing's layout: products
on the packed row, attention per group of similar lengths), against the packed forwards: encoder alone and whole
translations (int8; `STREAMS=2`: two threads, two decoding streams over twice the batches)."""
import os, sys, time, warnings, statistics, torch
from typing import List, Optional
from torch import nn
warnings.simplefilter("ignore")
STREAMS = int(os.environ.get("STREAMS", "1"))
torch.set_num_threads(STREAMS)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_batches.py")).read())
import zhen.layer_steps as ls
from zhen.modeling_zhen import apply_rotary_pos_emb
from zhen.packing import pack_sources, unpack

class PackedEncoderLayerStep(ls.EncoderLayerStep):
    def forward(self, hidden_states: torch.Tensor, cos: Optional[torch.Tensor], sin: Optional[torch.Tensor],
                gather: torch.Tensor, unpad: torch.Tensor, sizes: List[int], shapes: List[List[int]],
                masks: List[Optional[torch.Tensor]]) -> torch.Tensor:
        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        tokens = hidden_states.shape[1]
        projected = self.qkv_proj.project(hidden_states).view(1, tokens, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        query, key, value = projected[0], projected[1], projected[2]
        if cos is not None and sin is not None:
            query, key = apply_rotary_pos_emb(query, key, cos, sin)
        dim = query.shape[-1]
        groups = [self.grouped(t, gather, sizes, shapes, dim) for t in (query, key, value)]
        outputs: List[torch.Tensor] = []
        for i in range(len(sizes)):
            out = nn.functional.scaled_dot_product_attention(groups[0][i], groups[1][i], groups[2][i],
                                                             attn_mask=masks[i], scale=self.scaling)
            outputs.append(out.reshape(-1, dim))
        output = torch.cat(outputs).index_select(0, unpad).view(1, -1, self.heads, dim)
        output = output.reshape(1, tokens, -1).contiguous()
        hidden_states = residual + self.out_proj.project(output)
        if not self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        return self.feed_forward(hidden_states)

    def grouped(self, states: torch.Tensor, gather: torch.Tensor, sizes: List[int], shapes: List[List[int]],
                dim: int) -> List[torch.Tensor]:
        by_token = states.squeeze(0).transpose(0, 1).contiguous()
        padded = by_token.view(-1, dim).index_select(0, gather)
        parts = padded.split(sizes)
        return [parts[i].view(shapes[i][0], self.heads, shapes[i][1], dim) for i in range(len(sizes))]

class PackedEncoderSteps(ls.EncoderSteps):
    def __init__(self, encoder, products, sdpa):
        nn.Module.__init__(self)
        self.layers = nn.ModuleList(PackedEncoderLayerStep(layer, products, sdpa) for layer in encoder.layers)
        self.layer_norm = encoder.layer_norm
    def forward(self, hidden_states: torch.Tensor, cos: Optional[torch.Tensor], sin: Optional[torch.Tensor],
                gather: torch.Tensor, unpad: torch.Tensor, sizes: List[int], shapes: List[List[int]],
                masks: List[Optional[torch.Tensor]]) -> torch.Tensor:
        for layer in self.layers:
            hidden_states = layer(hidden_states, cos, sin, gather, unpad, sizes, shapes, masks)
        return self.layer_norm(hidden_states)

MODE = ["forwards"]
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    enc = q.get_encoder()
    for b in batches[:2]: s.encode(b["input_ids"], b["attention_mask"])
    products = {}
    for layer in enc.layers:
        for m in (layer.self_attn.qkv_proj, layer.self_attn.out_proj, layer.mlp):
            products[m] = ls.product_of(m)
    prog = torch.jit.script(PackedEncoderSteps(enc, products, True)); ls.inline(prog)
    heads = q.config.encoder_attention_heads
    def program(ids, am):
        packed = pack_sources(ids, am)
        side = packed["packed_layout"].source
        h, pe = enc.embed(packed["input_ids"], None, packed["position_ids"])
        cos, sin = pe or (None, None)
        with torch.jit.optimized_execution(False):
            out = prog(h, cos, sin, side.gather(heads), side.unpad(heads), [g.rows * heads * g.width for g in side],
                       [[g.rows, g.width] for g in side], [g.key_mask for g in side])
        return unpack(out, am)
    orig_encode = fg.FastDecoder.encode
    def encode(self, input_ids, attention_mask, in_bf16=False, script_layers=None):
        if MODE[0] == "program" and not bool(attention_mask.all()):
            return program(input_ids, attention_mask)
        return orig_encode(self, input_ids, attention_mask, in_bf16, script_layers)
    fg.FastDecoder.encode = encode
    for b in batches[:2]: program(b["input_ids"], b["attention_mask"])
    enc_res = {"forwards": [], "program": []}; outs = {}
    for r in range(7):
        for k in (("forwards", "program") if r % 2 == 0 else ("program", "forwards")):
            MODE[0] = k
            t = time.perf_counter(); outs[k] = [s.encode(b["input_ids"], b["attention_mask"]) for b in batches]
            enc_res[k].append(time.perf_counter() - t)
    same = all(torch.equal(a, c) for a, c in zip(outs["forwards"], outs["program"]))
    diff = max(float((a - c).abs().max()) for a, c in zip(outs["forwards"], outs["program"]))
    print("encoder:", {k: f"{statistics.median(v)*1e3:.1f} ms" for k, v in enc_res.items()},
          "paired forwards/program", f"{statistics.median([a/c for a, c in zip(enc_res['forwards'], enc_res['program'])]):.3f}",
          "bit-equal", same, "max diff", diff, flush=True)
    res = {"forwards": [], "program": []}; seqs = {}
    for r in range(7):
        for k in (("forwards", "program") if r % 2 == 0 else ("program", "forwards")):
            MODE[0] = k
            t = time.perf_counter(); seqs[k] = list(s.map(lambda kw: s.generate(**kw), batches * STREAMS, STREAMS))
            res[k].append(time.perf_counter() - t)
    same = all(torch.equal(a, c) for a, c in zip(seqs["forwards"], seqs["program"]))
    print("translation:", {k: f"{statistics.median(v)*1e3:.1f} ms" for k, v in res.items()},
          "paired forwards/program", f"{statistics.median([a/c for a, c in zip(res['forwards'], res['program'])]):.3f}", "same ids", same)
