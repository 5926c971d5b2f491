import zhen.fast_generation as fg
from zhen import screened_argmax as sa
sa.FEW_ROWS_MIN_WEIGHT = 1 << 20
sa.PACK_AFTER = 0
orig = fg.DecoderSteps.next_tokens
screens = {}
state = {"on": False}
def next_tokens(self, hidden_states, banned=None):
    if state["on"] and len(hidden_states) <= sa.FEW_ROWS:
        head = self.lm_head
        linear = head.linear if hasattr(head, "linear") else head
        s = screens.get(id(linear))
        if s is None:
            s = screens[id(linear)] = sa.ScreenedArgmax(linear)
        tokens = s.many_rows(hidden_states.float(), banned)
        if tokens is not None:
            return tokens
    return orig(self, hidden_states, banned)
fg.DecoderSteps.next_tokens = next_tokens
def off(): state["on"] = False
def on(): state["on"] = True
VARIANTS = {"bf16head": off, "screen": on}
