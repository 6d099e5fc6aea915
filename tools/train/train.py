#!/usr/bin/python3
"""Train gelo's small Qwen3-architecture model on the KJV corpus (issue 51).

The model is the decoder gelo traces (models/trace.go) for model_type
"qwen3": RMSNorm before attention and MLP, q/k RMSNorm per head before RoPE
(HF rotate_half), GQA (query head h reads kv head h // (heads/kv_heads)),
SwiGLU MLP, no biases, tied embeddings, final RMSNorm. Training runs in
float32 on the CPU; the export rounds the weights to bfloat16 (round to
nearest even, as torch's .to(torch.bfloat16)).

Inputs are the uint16 token ids tools/tokprune writes (tokenizer: gelo's
Go tokenizer, so no Python tokenizer is involved). Outputs, in --out:
config.json, model.safetensors (bf16, HF tensor names); the tokenizer
files are already there from tokprune. The loss curve goes to --log.

Determinism: one seed drives the initialisation and the batch sampler; the
step count is fixed (not a time budget), so the same command on the same
machine and thread count replays the same arithmetic. See README.md.
"""
import argparse
import hashlib
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a = p.add_argument
    a("--data", default="tools/train/data", help="directory with train.ids and heldout.ids")
    a("--out", default="models/trained", help="directory to export config.json and model.safetensors to")
    a("--log", default="tools/train/runs/loss.tsv", help="loss curve (TSV)")
    a("--ckpt", default="", help="checkpoint file to save at each evaluation and resume from if present")
    a("--seed", type=int, default=51)
    a("--layers", type=int, default=4)
    a("--hidden", type=int, default=192)
    a("--heads", type=int, default=4)
    a("--kv-heads", type=int, default=2)
    a("--head-dim", type=int, default=48)
    a("--ff", type=int, default=576)
    a("--seq", type=int, default=256)
    a("--batch", type=int, default=16)
    a("--steps", type=int, default=1000)
    a("--lr", type=float, default=3e-3)
    a("--min-lr", type=float, default=3e-4)
    a("--warmup", type=int, default=50)
    a("--wd", type=float, default=0.1)
    a("--threads", type=int, default=2)
    a("--eval-every", type=int, default=250)
    a("--eval-ctx", type=int, default=256, help="held-out windows, scored as gelo perplexity --ctx scores them")
    a("--rope-theta", type=float, default=1e6)
    a("--eps", type=float, default=1e-6)
    a("--bench", type=int, default=0, help="time this many steps, print tokens/s, write nothing")
    a("--no-export", action="store_true")
    a("--stop-after", type=int, default=0, help="stop after this step (the schedule still spans --steps), then report and export")
    a("--export-only", action="store_true", help="load --ckpt, report and export it, train nothing")
    return p.parse_args(argv)


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_tables(head_dim, theta, n):
    """cos, sin [n, head_dim/2] as models/rope computes them (float64, rounded once)."""
    inv = theta ** (-2.0 * np.arange(head_dim // 2, dtype=np.float64) / head_dim)
    ang = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
    return torch.from_numpy(np.cos(ang).astype(np.float32)), torch.from_numpy(np.sin(ang).astype(np.float32))


def rope(x, cos, sin):
    """x [B, H, T, hd], HF rotate_half: the first half pairs with the second."""
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


class Model(torch.nn.Module):
    def __init__(self, vocab, args):
        super().__init__()
        d, hd, ff = args.hidden, args.head_dim, args.ff
        self.args = args
        P = torch.nn.Parameter
        self.embed = P(torch.randn(vocab, d) * 0.02)
        self.layers = torch.nn.ModuleList()
        for _ in range(args.layers):
            m = torch.nn.Module()
            m.ln1 = P(torch.ones(d))
            m.q = P(torch.randn(args.heads * hd, d) * 0.02)
            m.k = P(torch.randn(args.kv_heads * hd, d) * 0.02)
            m.v = P(torch.randn(args.kv_heads * hd, d) * 0.02)
            m.o = P(torch.randn(d, args.heads * hd) * 0.02 / math.sqrt(2 * args.layers))
            m.qn = P(torch.ones(hd))
            m.kn = P(torch.ones(hd))
            m.ln2 = P(torch.ones(d))
            m.gate = P(torch.randn(ff, d) * 0.02)
            m.up = P(torch.randn(ff, d) * 0.02)
            m.down = P(torch.randn(d, ff) * 0.02 / math.sqrt(2 * args.layers))
            self.layers.append(m)
        self.norm = P(torch.ones(d))
        cos, sin = rope_tables(hd, args.rope_theta, args.eval_ctx if args.eval_ctx > args.seq else args.seq)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, ids):
        a = self.args
        B, T = ids.shape
        hd, H, KV = a.head_dim, a.heads, a.kv_heads
        cos, sin = self.cos[:T], self.sin[:T]
        mask = torch.full((T, T), float("-inf")).triu(1)
        x = F.embedding(ids, self.embed)
        for m in self.layers:
            h = rms_norm(x, m.ln1, a.eps)
            q = (h @ m.q.t()).view(B, T, H, hd)
            k = (h @ m.k.t()).view(B, T, KV, hd)
            v = (h @ m.v.t()).view(B, T, KV, hd).transpose(1, 2)
            q = rope(rms_norm(q, m.qn, a.eps).transpose(1, 2), cos, sin)
            k = rope(rms_norm(k, m.kn, a.eps).transpose(1, 2), cos, sin)
            k = k.repeat_interleave(H // KV, dim=1)
            v = v.repeat_interleave(H // KV, dim=1)
            s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd)) + mask
            att = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H * hd)
            x = x + att @ m.o.t()
            h = rms_norm(x, m.ln2, a.eps)
            x = x + (F.silu(h @ m.gate.t()) * (h @ m.up.t())) @ m.down.t()
        return rms_norm(x, self.norm, a.eps) @ self.embed.t()

    def hf_tensors(self):
        """HF names (models/tensors.go) to float32 tensors, in canonical order."""
        t = {"model.embed_tokens.weight": self.embed}
        for i, m in enumerate(self.layers):
            p = f"model.layers.{i}."
            t[p + "input_layernorm.weight"] = m.ln1
            t[p + "self_attn.q_proj.weight"] = m.q
            t[p + "self_attn.k_proj.weight"] = m.k
            t[p + "self_attn.v_proj.weight"] = m.v
            t[p + "self_attn.o_proj.weight"] = m.o
            t[p + "self_attn.q_norm.weight"] = m.qn
            t[p + "self_attn.k_norm.weight"] = m.kn
            t[p + "post_attention_layernorm.weight"] = m.ln2
            t[p + "mlp.gate_proj.weight"] = m.gate
            t[p + "mlp.up_proj.weight"] = m.up
            t[p + "mlp.down_proj.weight"] = m.down
        t["model.norm.weight"] = self.norm
        return {k: v.detach() for k, v in t.items()}


def lr_at(step, args):
    """Linear warmup, then cosine from lr to min_lr over the remaining steps."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    f = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * f))


@torch.no_grad()
def heldout_nll(model, ids, ctx):
    """Mean NLL and token count over windows of ctx tokens, llama-perplexity's
    rule as gelo's eval applies it: consecutive windows from token 0 (a
    shorter tail dropped), no BOS, each from an empty context; rows
    ctx/2 .. ctx-2 predict tokens ctx/2+1 .. ctx-1. log-softmax in float64."""
    n = len(ids) // ctx
    total, count = 0.0, 0
    for w in range(0, n, 8):
        x = torch.from_numpy(ids[w * ctx:min(n, w + 8) * ctx].astype(np.int64)).view(-1, ctx)
        logits = model(x)[:, ctx // 2:ctx - 1].double()
        tgt = x[:, ctx // 2 + 1:]
        total += -logits.log_softmax(-1).gather(-1, tgt.unsqueeze(-1)).sum().item()
        count += tgt.numel()
    return total / count, count


def batches(train, args, gen):
    """Random windows of seq+1 tokens, positions from a seeded numpy generator."""
    hi = len(train) - args.seq - 1
    while True:
        starts = gen.integers(0, hi, size=args.batch)
        x = np.stack([train[s:s + args.seq + 1] for s in starts]).astype(np.int64)
        yield torch.from_numpy(x)


def decay_groups(model, wd):
    mats = [p for p in model.parameters() if p.dim() == 2]
    vecs = [p for p in model.parameters() if p.dim() < 2]
    return [{"params": mats, "weight_decay": wd}, {"params": vecs, "weight_decay": 0.0}]


def main(argv):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    train = np.fromfile(os.path.join(args.data, "train.ids"), dtype="<u2")
    held = np.fromfile(os.path.join(args.data, "heldout.ids"), dtype="<u2")
    tok = json.load(open(os.path.join(args.out, "tokenizer.json"), encoding="utf-8"))
    vocab = len(tok["model"]["vocab"]) + len(tok["added_tokens"])
    specials = {a["content"]: a["id"] for a in tok["added_tokens"]}
    model = Model(vocab, args)
    nparam = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(decay_groups(model, args.wd), lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    gen = np.random.default_rng(args.seed)
    start = 0
    if args.ckpt and os.path.exists(args.ckpt):
        st = torch.load(args.ckpt)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        gen.bit_generator.state = st["gen"]
        torch.set_rng_state(st["torch_rng"])
        start = st["step"]
        print(f"resumed at step {start} from {args.ckpt}", flush=True)
    print(f"vocab {vocab}, params {nparam}, train tokens {len(train)}, held-out tokens {len(held)}, "
          f"torch {torch.__version__}, threads {torch.get_num_threads()}", flush=True)
    if args.export_only:
        if not start:
            sys.exit("--export-only needs an existing --ckpt")
        report(model, held, args)
        return export(model, vocab, specials, args)
    it = batches(train, args, gen)
    if args.bench:
        return bench(model, opt, it, args)
    os.makedirs(os.path.dirname(args.log) or ".", exist_ok=True)
    log = open(args.log, "a" if start else "w")
    if not start:
        log.write("step\tlr\ttrain_loss\theldout_nll\theldout_ppl\telapsed_s\ttokens\n")
    t0 = time.time()
    end = min(args.steps, args.stop_after) if args.stop_after else args.steps
    for step in range(start, end):
        loss = train_step(model, opt, next(it), lr_at(step, args))
        row = [step + 1, f"{lr_at(step, args):.6g}", f"{loss:.5f}", "", "", f"{time.time() - t0:.1f}",
               (step + 1) * args.batch * args.seq]
        if (step + 1) % args.eval_every == 0 or step + 1 == end:
            nll, _ = heldout_nll(model, held, args.eval_ctx)
            row[3], row[4] = f"{nll:.5f}", f"{math.exp(nll):.3f}"
            if args.ckpt:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "gen": gen.bit_generator.state,
                            "torch_rng": torch.get_rng_state(), "step": step + 1}, args.ckpt)
        if (step + 1) % 10 == 0 or row[3]:
            log.write("\t".join(map(str, row)) + "\n")
            log.flush()
            print("\t".join(map(str, row)), flush=True)
    log.close()
    report(model, held, args)
    if not args.no_export:
        export(model, vocab, specials, args)


def train_step(model, opt, xb, lr):
    for g in opt.param_groups:
        g["lr"] = lr
    logits = model(xb[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), xb[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss.item()


def bench(model, opt, it, args):
    train_step(model, opt, next(it), args.lr)
    t0 = time.time()
    for _ in range(args.bench):
        train_step(model, opt, next(it), args.lr)
    dt = time.time() - t0
    print(f"{args.bench} steps, {dt / args.bench:.3f} s/step, {args.bench * args.batch * args.seq / dt:.0f} tok/s")


def report(model, held, args):
    """Held-out NLL of the f32 weights and of the bf16-rounded weights gelo loads."""
    nll, n = heldout_nll(model, held, args.eval_ctx)
    f32 = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).float())
    nll16, _ = heldout_nll(model, held, args.eval_ctx)
    model.load_state_dict(f32)
    h = hashlib.sha256()
    for t in model.hf_tensors().values():
        h.update(t.contiguous().numpy().tobytes())
    print(f"f32 parameters sha256 {h.hexdigest()}", flush=True)
    print(f"held-out (ctx {args.eval_ctx}, {n} scored tokens): f32 NLL {nll:.6f} PPL {math.exp(nll):.4f}; "
          f"bf16 weights NLL {nll16:.6f} PPL {math.exp(nll16):.4f}", flush=True)


def export(model, vocab, specials, args):
    a = args
    cfg = {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
        "hidden_size": a.hidden, "intermediate_size": a.ff, "num_hidden_layers": a.layers,
        "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads, "head_dim": a.head_dim,
        "vocab_size": vocab, "max_position_embeddings": 4096, "rope_theta": a.rope_theta,
        "rms_norm_eps": a.eps, "tie_word_embeddings": True, "attention_bias": False,
        "hidden_act": "silu", "bos_token_id": specials["<|endoftext|>"],
        "eos_token_id": specials["<|endoftext|>"], "torch_dtype": "bfloat16",
    }
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    path = os.path.join(a.out, "model.safetensors")
    write_safetensors(path, model.hf_tensors())
    print(f"wrote {a.out}/config.json and {path} (sha256 {sha256(path)})", flush=True)


def write_safetensors(path, tensors):
    """safetensors: u64 header length, JSON header (offsets), raw little-endian bf16."""
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        b = t.contiguous().to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


if __name__ == "__main__":
    main(sys.argv[1:])
