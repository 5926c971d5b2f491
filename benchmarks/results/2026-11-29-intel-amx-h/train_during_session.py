"""What another thread's training step, model.train(), load_state_dict and double() do while a FastDecoder session of
the model is open (held open by a thread). Usage: train_during_session.py (ZHEN_HARDWARE=cpu_bf16=emulated for the
float32 class)."""
import threading, torch
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder

torch.manual_seed(0)
cfg = ZhenConfig(vocab_size=64, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                 decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, dropout=0.1, pad_token_id=0,
                 bos_token_id=1, eos_token_id=2, decoder_start_token_id=2)
m = ZhenForConditionalGeneration(cfg).eval()
other = ZhenForConditionalGeneration(cfg).eval().state_dict()
x = torch.randint(3, 64, (64, 40)); y = torch.randint(3, 64, (64, 40))
params = dict(m.named_parameters())


def grads():
    for p in params.values():
        p.grad = None
    m(input_ids=x, labels=y).loss.backward()
    return {n: p.grad for n, p in params.items()}


ref = {n: g.clone() for n, g in grads().items()}
inside, done = threading.Event(), threading.Event()


def hold():
    with FastDecoder(m):
        inside.set()
        done.wait()


def in_thread(function, *args):
    thread = threading.Thread(target=function, args=args)
    thread.start()
    thread.join(timeout=1)
    return thread


holder = threading.Thread(target=hold); holder.start(); inside.wait()
g = grads()
missing = [n for n in ref if g[n] is None or not torch.allclose(g[n], ref[n], atol=1e-6)]
print(f"training step during the session: {len(missing)} of {len(ref)} weights without their own gradient")
waiters = [in_thread(m.train), in_thread(m.load_state_dict, other), in_thread(m.double)]
print("train() / load_state_dict() / double() from another thread waited for the session:",
      [t.is_alive() for t in waiters])
done.set(); holder.join()
for t in waiters:
    t.join()
print("after the session: every module in training mode:", all(mod.training for mod in m.modules()))
print("every weight loaded:", all(torch.equal(t.double(), other[n].double()) for n, t in m.state_dict().items()))
print("every weight float64:", all(p.dtype == torch.float64 for p in m.state_dict().values()))
