import zhen.fast_generation as fg
_holds = fg.SessionPlan.holds
state = {"on": True}
fg.SessionPlan.holds = lambda self, session, modules: state["on"] and _holds(self, session, modules)
def computed(): state["on"] = False
def planned(): state["on"] = True
VARIANTS = {"computed": computed, "planned": planned}
