"""The ceiling of a cheaper session opening, measured on the code before SessionPlan (commit ec36c4d): "replay" makes a
model's session repeat the last one's swaps, attributes and layer programs with no check at all (not safe: a
measurement only). Usage (on that commit): ../2026-11-29-intel-amx-e/percall_ab.py CHECKPOINT 1 v_replay.py 16 3"""
import threading, weakref, functools
import zhen.fast_generation as fg
from zhen.fast_generation import FastDecoder, _put, _OPEN, DECODING_ATTENTION, _OWN_IMPLEMENTATIONS
state = {"replay": False}
memo = {}
_init, _enter, _exit = FastDecoder.__init__, FastDecoder.__enter__, FastDecoder.__exit__
def init(self, model, *a, **k):
    t = memo.get(id(model)) if state["replay"] and not a and not k else None
    if t is None:
        _init(self, model, *a, **k); return
    self.__dict__.update(t["dict"])
    self.swapped, self.parent_modes, self.workspaces = [], [], {}
    self.programs = dict(t["programs"])
    self.draft_session = None
def enter(self):
    t = memo.get(id(self.model))
    if not state["replay"] or t is None or "swaps" not in t:
        r = _enter(self)
        memo.setdefault(id(self.model), {})["swaps"] = [(p, n, o, p._modules[n]) for p, n, o in self.swapped]
        memo[id(self.model)]["modes"] = list(self.parent_modes)
        return r
    self.lock.acquire()
    config = self.model.config
    self.attn_implementation = config._attn_implementation
    _OWN_IMPLEMENTATIONS[id(config)] = self.attn_implementation
    config._attn_implementation_internal = DECODING_ATTENTION
    for p, n, o, r in t["swaps"]:
        self.swapped.append((p, n, o)); _put(p, n, r)
    self.parent_modes = list(t["modes"])
    _OPEN[self.model] = self, threading.get_ident()
    return self
def exit(self, *e):
    m = memo.setdefault(id(self.model), {})
    if "dict" not in m:
        d = {k: v for k, v in self.__dict__.items() if k not in ("swapped", "parent_modes", "workspaces", "programs", "draft_session")}
        m["dict"] = d
    m["programs"] = dict(self.programs)
    return _exit(self, *e)
FastDecoder.__init__, FastDecoder.__enter__, FastDecoder.__exit__ = init, enter, exit
def base(): state["replay"] = False
def replay(): state["replay"] = True
VARIANTS = {"fresh": base, "replay": replay}
