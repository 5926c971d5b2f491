import zhen.fast_generation as fg
orig = fg.FastDecoder.swap_in_session_linears
state = {"rows": 0}
def patched(self):
    orig(self)
    if state["rows"]:
        for m in self.model.get_encoder().modules():
            if isinstance(m, fg.Bf16Linear):
                m.few_rows = state["rows"]
fg.FastDecoder.swap_in_session_linears = patched
def off(): state["rows"] = 0
def on(): state["rows"] = 64
VARIANTS = {"rule": off, "enc_fp32": on}
