import zhen.fast_generation as fg
orig = fg.FastDecoder.__init__
state = {"script": True}
def init(self, *a, **k):
    orig(self, *a, **k)
    self.script_layers = state["script"]
fg.FastDecoder.__init__ = init
def on(): state["script"] = True
def off(): state["script"] = False
VARIANTS = {"scripted": on, "python": off}
