"""The thirty-fourth session's opening of a session against the code before it, in one process: "before" chooses
every session's swaps again (no `SessionPlan`) and lists a module's weights through `nn.Module.parameters()`."""
import zhen.fast_generation as fg

_holds, _weights_of = fg.SessionPlan.holds, fg._weights_of
state = {"after": True}
fg.SessionPlan.holds = lambda self, session, modules: state["after"] and _holds(self, session, modules)


def weights_of(module):
    if state["after"]:
        return _weights_of(module)
    if not module._modules:
        return [weight for weight in module._parameters.values() if weight is not None]
    return list(module.parameters())


fg._weights_of = weights_of


def before():
    state["after"] = False


def after():
    state["after"] = True


VARIANTS = {"before": before, "after": after}
