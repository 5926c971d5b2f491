"""The twenty-ninth session's screen in a bf16 session (`2026-11-29-intel-amx-f/v_bf16_screen.py`, its VARIANTS), one
row going through the screen's FBGEMM path (`many_rows`, the weight packed from the first call) instead of
`one_row`'s `torch._int_mm`, which reorders the weight for AMX at every call."""
import importlib.util, os
from zhen import screened_argmax as sa
sa.ScreenedArgmax.__call__ = lambda self, hidden, banned=None: self.many_rows(hidden.float(), banned)
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-29-intel-amx-f", "v_bf16_screen.py")
spec = importlib.util.spec_from_file_location("v_bf16_screen", path)
screen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(screen)
VARIANTS = screen.VARIANTS
