"""A JAX profile (jax.profiler.trace) of one small transformer training step, for
tests/fixtures/ (scripts/gpu-capture.sh). Plain jax.numpy, random weights.

    XLA_PYTHON_CLIENT_PREALLOCATE=false python3 scripts/gpu/jax_capture.py OUTDIR

Writes OUTDIR/plugins/profile/<run>/<host>.xplane.pb and, with
create_perfetto_trace=True, a .trace.json.gz beside it.
"""
import sys

import jax
import jax.numpy as jnp

D, HEADS, LAYERS, BATCH, SEQ, VOCAB = 512, 8, 2, 8, 256, 8192


def init(key):
    keys = jax.random.split(key, 2 + 4 * LAYERS)
    p = {"emb": jax.random.normal(keys[0], (VOCAB, D)) * 0.02,
         "head": jax.random.normal(keys[1], (D, VOCAB)) * 0.02, "layers": []}
    for i in range(LAYERS):
        k = keys[2 + 4 * i: 6 + 4 * i]
        p["layers"].append({"qkv": jax.random.normal(k[0], (D, 3 * D)) * 0.02,
                            "out": jax.random.normal(k[1], (D, D)) * 0.02,
                            "up": jax.random.normal(k[2], (D, 4 * D)) * 0.02,
                            "down": jax.random.normal(k[3], (4 * D, D)) * 0.02})
    return p


def norm(x):
    m = x.mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def forward(p, tokens):
    x = p["emb"][tokens].astype(jnp.bfloat16)
    mask = jnp.tril(jnp.ones((SEQ, SEQ), bool))
    for l in p["layers"]:
        h = norm(x) @ l["qkv"].astype(jnp.bfloat16)
        q, k, v = [t.reshape(BATCH, SEQ, HEADS, D // HEADS) for t in jnp.split(h, 3, -1)]
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / (D // HEADS) ** 0.5
        a = jax.nn.softmax(jnp.where(mask, s, -1e9).astype(jnp.float32), -1).astype(jnp.bfloat16)
        o = jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(BATCH, SEQ, D)
        x = x + o @ l["out"].astype(jnp.bfloat16)
        x = x + jax.nn.gelu(norm(x) @ l["up"].astype(jnp.bfloat16)) @ l["down"].astype(jnp.bfloat16)
    return (norm(x) @ p["head"].astype(jnp.bfloat16)).astype(jnp.float32)


def loss(p, tokens, target):
    logits = forward(p, tokens)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), target[..., None], -1))


@jax.jit
def step(p, tokens, target):
    l, g = jax.value_and_grad(loss)(p, tokens, target)
    return jax.tree_util.tree_map(lambda a, b: a - 1e-3 * b, p, g), l


def main(outdir):
    key = jax.random.PRNGKey(0)
    p = init(key)
    tokens = jax.random.randint(key, (BATCH, SEQ), 0, VOCAB)
    target = jax.random.randint(jax.random.PRNGKey(1), (BATCH, SEQ), 0, VOCAB)
    for _ in range(2):
        p, l = step(p, tokens, target)
    l.block_until_ready()
    with jax.profiler.trace(outdir, create_perfetto_trace=True):
        for _ in range(2):
            p, l = step(p, tokens, target)
        l.block_until_ready()
    print("jax", jax.__version__, jax.devices(), "loss", float(l))


if __name__ == "__main__":
    main(sys.argv[1])
