"""The layers' program with fewer operations a step (a 2-D residual stream, few-row float32 products through `addmm`
on the transposed weight, attention's products as `bmm` on 3-D views) against today's, for `percall_ab.py`: the lean
module is zhen/layer_steps.py with the replacements below, loaded under its own name (TorchScript compiles its classes
apart from zhen's)."""
import importlib.util, pathlib, sys, types
from zhen import layer_steps

REPLACEMENTS = [
    ("from .modeling_zhen import apply_rotary_pos_emb", "from zhen.modeling_zhen import apply_rotary_pos_emb"),
    ("""    query = query.reshape(batch, queries, heads, dim).transpose(1, 2).contiguous()
    every = torch.matmul(query, keys.reshape(batch, heads, length * beams, dim).transpose(-1, -2))
    scores = every if columns is None else every.gather(-1, columns)""",
     """    query = query.reshape(batch, queries, heads, dim).transpose(1, 2).reshape(batch * heads, queries, dim)
    every = torch.bmm(query, keys.reshape(batch * heads, length * beams, dim).transpose(1, 2))
    every = every.view(batch, heads, queries, length * beams)
    scores = every if columns is None else every.gather(-1, columns)"""),
    ("""            weights = weights[:, :, :, None]
        output = torch.matmul(weights, history)""",
     """            weights = weights[:, :, :, None]
            output = torch.matmul(weights, history)
        else:
            output = torch.bmm(weights.view(batch * heads, queries, length * beams),
                               history.view(batch * heads, length * beams, dim))"""),
    ("""        if plain is not None and x.numel() <= self.few_rows * x.size(-1):
            return nn.functional.linear(x, plain, self.plain_bias)""",
     """        if plain is not None and x.numel() <= self.few_rows * x.size(-1):
            bias = self.plain_bias
            if bias is None:
                return torch.mm(x, plain.t())
            return torch.addmm(bias, x, plain.t())"""),
    ("""        i = 0
        for layer in self.layers:
            hidden_states = layer(hidden_states, keys[i], values[i], position, source_keys[i], source_values[i],
                                  source_bias, cos, sin, self_columns, self_rows, source_key_rows, source_value_rows,
                                  causal)  # fmt: skip
            i += 1
        hidden_states = self.layer_norm(hidden_states)
        return hidden_states[:, 0] if causal is None else hidden_states[0]""",
     """        i = 0
        length = hidden_states.shape[1]
        hidden_states = hidden_states.reshape(-1, hidden_states.shape[-1])
        for layer in self.layers:
            hidden_states = layer(hidden_states, keys[i], values[i], position, source_keys[i], source_values[i],
                                  source_bias, cos, sin, self_columns, self_rows, source_key_rows, source_value_rows,
                                  length, causal)  # fmt: skip
            i += 1
        return self.layer_norm(hidden_states)"""),
    ("""                causal: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        projected = split_heads(self.qkv_proj.project(hidden_states), 3, self.heads)""",
     """                length: int, causal: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        n = hidden_states.shape[0]
        projected = split_heads(self.qkv_proj.project(hidden_states).view(n // length, length, -1), 3, self.heads)"""),
    ("""        query = split_heads(self.q_proj.project(hidden_states), 1, self.heads)[0]""",
     """        query = split_heads(self.q_proj.project(hidden_states).view(n // length, length, -1), 1, self.heads)[0]"""),
    ("""        return output.reshape(hidden_states.shape[0], hidden_states.shape[1], -1).contiguous()""",
     """        return output.reshape(hidden_states.shape[0], -1).contiguous()"""),
]


def lean_module() -> types.ModuleType:
    source = pathlib.Path(layer_steps.__file__).read_text()
    for old, new in REPLACEMENTS:
        assert source.count(old) == 1, old[:60]
        source = source.replace(old, new)
    path = pathlib.Path("/tmp/lean_steps.py")
    path.write_text(source)  # TorchScript reads a class's source from its file
    spec = importlib.util.spec_from_file_location("lean_steps", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["lean_steps"] = module
    spec.loader.exec_module(module)
    return module


lean_steps = lean_module()
orig = layer_steps.decoder_layer_steps
def use_orig(): layer_steps.decoder_layer_steps = orig
def use_lean(): layer_steps.decoder_layer_steps = lean_steps.decoder_layer_steps
VARIANTS = {"orig": use_orig, "lean": use_lean}
