"""Anonymous memory put in 2 MiB pages after the fact (`MADV_COLLAPSE`, Linux 6.1+), for the huge-page A/Bs."""
import ctypes

libc = ctypes.CDLL("libc.so.6", use_errno=True)
MADV_HUGEPAGE, MADV_COLLAPSE, HUGE = 14, 25, 2**21


def regions():
    """This process's anonymous mappings (and heap) of at least one huge page, as (start, end)."""
    out = set()
    for line in open("/proc/self/maps"):
        f = line.split()
        if len(f) == 5 or (len(f) == 6 and f[5].startswith("[heap")):
            a, b = (int(x, 16) for x in f[0].split("-"))
            if b - a >= HUGE:
                out.add((a, b))
    return out


def collapse(regs):
    """Collapse the whole huge pages inside `regs` into huge pages; returns how many were."""
    n = 0
    for a, b in regs:
        s, e = (a + HUGE - 1) & ~(HUGE - 1), b & ~(HUGE - 1)
        if e > s:
            libc.madvise(ctypes.c_void_p(s), ctypes.c_size_t(e - s), MADV_HUGEPAGE)
            n += ((e - s) >> 21) if libc.madvise(ctypes.c_void_p(s), ctypes.c_size_t(e - s), MADV_COLLAPSE) == 0 else 0
    return n


def huge_kb():
    return int([l for l in open("/proc/self/smaps_rollup") if "AnonHuge" in l][0].split()[1])
