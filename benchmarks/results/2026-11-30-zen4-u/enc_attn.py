import torch, time
torch.set_num_threads(1)
def t(f, n=200):
    for _ in range(10): f()
    t0 = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t0) / n * 1e6
for rows, w in ((64, 8), (64, 12), (64, 20), (32, 30), (16, 48)):
    q, k, v = (torch.randn(rows, 4, w, 64) for _ in range(3))
    mask = torch.ones(rows, 1, 1, w, dtype=torch.bool); mask[: rows // 2, ..., -2:] = False
    sd = t(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.125))
    sd0 = t(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.125))
    bias = torch.zeros(rows, 1, 1, w).masked_fill_(~mask, float("-inf"))
    def eager():
        s = torch.matmul(q, k.transpose(-1, -2)) * 0.125 + bias
        return torch.matmul(torch.softmax(s, -1), v)
    print(f"rows {rows} width {w}: sdpa+mask {sd:.0f}  sdpa {sd0:.0f}  eager {t(eager):.0f} us")
from zhen import hardware
print("---")
for rows, w in ((64, 8), (64, 12), (64, 20), (32, 30), (16, 48)):
    q, k, v = (torch.randn(rows * 4, w, 64) for _ in range(3))
    bias = torch.zeros(rows, 4, w, w).view(rows * 4, w, w)
    def eager3():
        s = torch.baddbmm(bias, q, k.transpose(-1, -2), alpha=0.125)
        return torch.bmm(hardware.row_softmax(s, 16, 0), v)
    def eager3s():
        s = torch.baddbmm(bias, q, k.transpose(-1, -2), alpha=0.125)
        return torch.bmm(torch.softmax(s, -1), v)
    def parts():
        s = torch.bmm(q, k.transpose(-1, -2))
        return s
    print(f"rows {rows} width {w}: bmm3 row_softmax {t(eager3):.0f}  bmm3 softmax {t(eager3s):.0f}  first bmm alone {t(parts):.0f} us")
