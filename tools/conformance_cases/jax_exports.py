"""Conformance cases for models exported from JAX: `jax2tf.convert` with native serialization
writes one `XlaCallModule` node whose `module` attribute is a StableHLO portable artifact
(VHLO bytecode); hlobridge deserializes it and inlines it into a cluster
(hlobridge/ops/xla/call_module.py).

JAX (dev tool only, like TensorFlow) is installed into the TF venv by tools/make_tf_venv.sh:
jax 0.10.2, the newest release on the package index here; its `jax.experimental.jax2tf` still
converts with native serialization (the default) and works with TF 2.21 and the venv's numpy.

Each builder computes JAX's own outputs for every run and checks that TensorFlow running the
tf.function agrees with them (`_check_against_jax`); the recorded expected values are then TF's
results of the written GraphDef, as for every other case, which therefore equal JAX's within
the case's tolerance. The parameters are tf.Variables frozen to Consts (how a jax2tf SavedModel
holds them: inputs of the XlaCallModule), except in the conv case, where they are closed over
and live inside the StableHLO module as constants.
"""

import numpy as np

from .registry import STYLE_FUNCTION, TOL_MODEL, Built, case, frozen_graph, normal, tf

STYLE_JAX2TF = "JAX function converted by jax2tf (native serialization: XlaCallModule), " + STYLE_FUNCTION


def _jax():
    import jax
    from jax.experimental import jax2tf
    jax.config.update("jax_platforms", "cpu")
    # the module's locations name source files: base names only, no tracebacks, so that the
    # written module does not depend on where the repository is checked out
    jax.config.update("jax_include_full_tracebacks_in_locations", False)
    jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/")
    return jax, jax2tf


def _check_against_jax(fn_jax, fn_tf, runs, tol):
    """TF's results of the converted function equal JAX's own, run by run; returns the largest
    difference (recorded in case.json)."""
    worst = 0.0
    for run in runs:
        if len(run) > 2:  # a run that must fail: JAX's shape check refuses it too
            continue
        args = list(run[1].values())
        wants = [np.asarray(w) for w in tf.nest.flatten(fn_jax(*args))]
        gots = [np.asarray(g) for g in tf.nest.flatten(fn_tf(*[tf.constant(a) for a in args]))]
        assert len(gots) == len(wants), run[0]
        for got, want in zip(gots, wants):
            np.testing.assert_allclose(got, want, rtol=tol["rtol"], atol=tol["atol"], err_msg=run[0])
            worst = max(worst, float(np.max(np.abs(got - want), initial=0.0)))
    return worst


def _jax_case(fn, params, specs, runs, *, tol=TOL_MODEL, **convert):
    """fn(params, *inputs) in JAX -> a frozen GraphDef around one XlaCallModule (jax2tf.convert
    with `convert`'s options), its params as Consts; checked against JAX's outputs."""
    jax, jax2tf = _jax()
    converted = jax2tf.convert(fn, **convert)
    variables = tf.nest.map_structure(tf.Variable, params)
    return _built(lambda *xs: converted(variables, *xs), jax.jit(lambda *xs: fn(params, *xs)), specs, runs, tol)


def _built(tf_fn, jax_fn, specs, runs, tol):
    """The frozen GraphDef of tf_fn (an Identity per output), checked against jax_fn."""
    jax, _ = _jax()
    # no autograph: it would write its generated files' temporary names into the module's locations
    gd, outputs, _ = frozen_graph(tf.autograph.experimental.do_not_convert(
        lambda *xs: tf.nest.map_structure(tf.identity, tf_fn(*xs))), *specs)
    worst = _check_against_jax(jax_fn, tf_fn, runs, tol)
    return Built(gd, outputs, runs, {"jax": {"version": jax.__version__, "max_abs_diff_tf_vs_jax": worst}})


def _mlp_params(rng, sizes):
    return [(normal(rng, a, b, scale=1 / np.sqrt(a)), normal(rng, b, scale=0.1)) for a, b in zip(sizes, sizes[1:])]


def _mlp(params, x):
    import jax
    import jax.numpy as jnp
    (w1, b1), (w2, b2), (w3, b3) = params
    h = jax.nn.gelu(jnp.dot(x, w1) + b1)
    h = jnp.tanh(h @ w2 + b2)
    return jax.nn.softmax(h @ w3 + b3, axis=-1)


@case("jax_mlp", "jax",
      """A JAX MLP (jnp.dot, gelu (tanh approximation), tanh, softmax) converted by jax2tf with
      native serialization: one XlaCallModule (a StableHLO portable artifact) on frozen
      parameters; expected values checked against JAX's own.""",
      tol=TOL_MODEL, style=STYLE_JAX2TF, expect_ops=["XlaCallModule"])
def _jax_mlp(rng):
    params = _mlp_params(rng, [8, 16, 16, 4])
    nonfinite = normal(rng, 3, 8)
    nonfinite[0, 0], nonfinite[1, 3], nonfinite[2, 5] = np.nan, np.inf, -np.inf
    runs = [("batch3", {"x:0": normal(rng, 3, 8)}), ("wide", {"x:0": normal(rng, 3, 8, scale=10.0)}),
            ("nonfinite", {"x:0": nonfinite})]
    return _jax_case(_mlp, params, [tf.TensorSpec([3, 8], tf.float32, name="x")], runs)


@case("jax_mlp_poly_batch", "jax",
      """The JAX MLP exported with a polymorphic batch dimension (polymorphic_shapes=["(b, 8)"]):
      the module has dynamic shapes, dimension arithmetic and a shape assertion (b >= 1), which
      hlobridge resolves from the fed shapes; batch 0 fails JAX's shape assertion.""",
      tol=TOL_MODEL, style=STYLE_JAX2TF, expect_ops=["XlaCallModule"])
def _jax_mlp_poly(rng):
    params = _mlp_params(rng, [8, 16, 16, 4])
    runs = [("batch3", {"x:0": normal(rng, 3, 8)}), ("batch1", {"x:0": normal(rng, 1, 8)}),
            ("batch5", {"x:0": normal(rng, 5, 8)}),
            ("batch0", {"x:0": np.zeros((0, 8), np.float32)}, "Expected value >= 1 for dimension variable 'b'")]
    return _jax_case(_mlp, params, [tf.TensorSpec([None, 8], tf.float32, name="x")], runs,
                     polymorphic_shapes=[None, "(b, 8)"])


@case("jax_conv", "jax",
      """A JAX CNN: lax.conv_general_dilated (NHWC, stride 2, SAME), relu, a second conv with
      feature_group_count 2, average pooling by lax.reduce_window, a dense layer; its weights
      are closed over, so they are constants inside the StableHLO module.""",
      tol=TOL_MODEL, style=STYLE_JAX2TF, expect_ops=["XlaCallModule"])
def _jax_conv(rng):
    from jax import lax
    import jax.numpy as jnp
    k1, k2 = normal(rng, 3, 3, 3, 4, scale=0.3), normal(rng, 3, 3, 2, 4, scale=0.3)
    w = normal(rng, 4, 3, scale=0.5)

    def cnn(params, x):
        dn = ("NHWC", "HWIO", "NHWC")
        h = jax_relu(lax.conv_general_dilated(x, k1, (2, 2), "SAME", dimension_numbers=dn))
        h = jax_relu(lax.conv_general_dilated(h, k2, (1, 1), "SAME", dimension_numbers=dn, feature_group_count=2))
        h = lax.reduce_window(h, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
        return jnp.mean(h, axis=(1, 2)) @ w

    runs = [("batch2", {"x:0": normal(rng, 2, 8, 8, 3)})]
    return _jax_case(cnn, (), [tf.TensorSpec([2, 8, 8, 3], tf.float32, name="x")], runs)


def jax_relu(x):
    import jax
    return jax.nn.relu(x)


@case("jax_loops", "jax",
      """JAX control flow: lax.fori_loop (a counted loop: stablehlo.while with a counter) that
      applies a tanh layer 5 times, then lax.while_loop that halves the result's norm until it
      is below 1 (a data-dependent trip count) and counts its iterations (an int32 output).""",
      tol=TOL_MODEL, style=STYLE_JAX2TF, expect_ops=["XlaCallModule"])
def _jax_loops(rng):
    from jax import lax
    import jax.numpy as jnp
    w = normal(rng, 6, 6, scale=0.5)

    def loops(params, x):
        h = lax.fori_loop(0, 5, lambda i, h: jnp.tanh(h @ w + 0.1 * i), x)
        h = h * 40.0
        h, n = lax.while_loop(lambda c: jnp.sum(c[0] * c[0]) >= 1.0, lambda c: (c[0] * 0.5, c[1] + 1),
                              (h, jnp.int32(0)))
        return h * n.astype(h.dtype)

    runs = [("x", {"x:0": normal(rng, 2, 6)}), ("zeros", {"x:0": np.zeros((2, 6), np.float32)})]
    return _jax_case(loops, (), [tf.TensorSpec([2, 6], tf.float32, name="x")], runs)


@case("jax_multi_platform", "jax",
      """A JAX layer (tanh(x @ w + b), scaled by an iota) exported for two platforms
      (native_serialization_platforms=("cuda", "cpu")): main takes the platform's index as a
      leading argument, and the module branches on it (stablehlo.case).""",
      tol=TOL_MODEL, style=STYLE_JAX2TF, expect_ops=["XlaCallModule"])
def _jax_multi_platform(rng):
    import jax.numpy as jnp
    w, b = normal(rng, 5, 3), normal(rng, 3)

    def layer(params, x):
        return jnp.tanh(x @ params[0] + params[1]) * jnp.arange(1, 4, dtype=x.dtype)

    runs = [("batch4", {"x:0": normal(rng, 4, 5)})]
    return _jax_case(layer, (w, b), [tf.TensorSpec([4, 5], tf.float32, name="x")], runs,
                     native_serialization_platforms=("cuda", "cpu"))


@case("jax_cnn_poly_batch", "jax",
      """A JAX CNN exported with a polymorphic batch (polymorphic_shapes=["(b, 8, 8, 3)"]): a
      convolution whose output batch is b, max pooling (reduce_window), a strided slice, a
      reshape to (b, -1) (a dynamic_reshape), a cumsum over the batch (JAX's
      stablehlo.dynamic_reduce_window custom call), a concatenate and an argmax, all resolved
      from the fed batch.""",
      tol=TOL_MODEL, style=STYLE_JAX2TF, expect_ops=["XlaCallModule"])
def _jax_cnn_poly(rng):
    from jax import lax
    import jax.numpy as jnp
    k = normal(rng, 3, 3, 3, 4, scale=0.3)

    def cnn(params, x):
        h = jax_relu(lax.conv_general_dilated(x, k, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
        p = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = jnp.reshape(h[:, ::2, ::2, :] + jnp.cumsum(p, axis=0), (h.shape[0], -1))
        return jnp.concatenate([h, h[:, :3]], axis=1) * jnp.argmax(h, axis=1, keepdims=True).astype(h.dtype)

    runs = [("batch2", {"x:0": normal(rng, 2, 8, 8, 3)}), ("batch3", {"x:0": normal(rng, 3, 8, 8, 3)})]
    return _jax_case(cnn, (), [tf.TensorSpec([None, 8, 8, 3], tf.float32, name="x")], runs,
                     polymorphic_shapes=[None, "(b, 8, 8, 3)"])


@case("jax_transformer_poly_batch", "jax",
      """A small JAX transformer encoder on int32 token ids with a polymorphic batch: an embedding
      lookup (jnp.take: gather), positional embeddings, one attention head (einsum: dot_general
      with batch dims, a masked softmax), layer normalization, a gelu MLP; two outputs (per-token
      logits, and a mean-pooled vector).""",
      tol=TOL_MODEL, style=STYLE_JAX2TF, expect_ops=["XlaCallModule"])
def _jax_transformer(rng):
    import jax
    import jax.numpy as jnp
    vocab, seq, d = 11, 6, 8
    params = {"emb": normal(rng, vocab, d), "pos": normal(rng, seq, d, scale=0.1),
              "qkv": normal(rng, d, 3 * d, scale=d ** -0.5), "out": normal(rng, d, d, scale=d ** -0.5),
              "mlp": normal(rng, d, 2 * d, scale=d ** -0.5), "mlp2": normal(rng, 2 * d, d, scale=0.2),
              "head": normal(rng, d, vocab, scale=d ** -0.5)}

    def layer_norm(x):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(jnp.var(x, axis=-1, keepdims=True) + 1e-5)

    def encoder(p, ids):
        x = jnp.take(p["emb"], ids, axis=0) + p["pos"]
        q, k, v = jnp.split(layer_norm(x) @ p["qkv"], 3, axis=-1)
        scores = jnp.einsum("bqd,bkd->bqk", q, k) / jnp.sqrt(float(d))
        causal = jnp.tril(jnp.ones((seq, seq), bool))
        attn = jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1)
        x = x + jnp.einsum("bqk,bkd->bqd", attn, v) @ p["out"]
        x = x + jax.nn.gelu(layer_norm(x) @ p["mlp"]) @ p["mlp2"]
        return layer_norm(x) @ p["head"], jnp.mean(x, axis=1)

    def ids(*shape):
        return rng.integers(0, vocab, shape).astype(np.int32)

    runs = [("batch2", {"ids:0": ids(2, seq)}), ("batch1", {"ids:0": ids(1, seq)})]
    return _jax_case(encoder, params, [tf.TensorSpec([None, seq], tf.int32, name="ids")], runs,
                     polymorphic_shapes=[None, "(b, 6)"])


@case("jax_export_call_module", "jax",
      """jax.export (not jax2tf) with a symbolic batch (export.symbolic_shape("b, 3")), wrapped by
      hand in TF's XlaCallModule (tf2xla's call_module, as a tf.Module around an Exported does):
      sin, cumsum (a reduce_window) and a sum over the batch; Sout has the unknown batch.""",
      tol=TOL_MODEL, style=STYLE_JAX2TF, expect_ops=["XlaCallModule"])
def _jax_export_call_module(rng):
    import jax.numpy as jnp
    from jax import export
    from tensorflow.compiler.tf2xla.python import xla as tfxla
    jax, _ = _jax()

    def f(x):
        return jnp.sin(x) * 2 + jnp.cumsum(x, axis=1) - jnp.sum(x, axis=0)

    exported = export.export(jax.jit(f), platforms=["cpu"])(
        jax.ShapeDtypeStruct(export.symbolic_shape("b, 3"), jnp.float32))

    def call(x):
        (y,) = tfxla.call_module([x], version=exported.calling_convention_version,
                                 module=exported.mlir_module_serialized, Tout=[tf.float32], Sout=[(None, 3)],
                                 platforms=[p.upper() for p in exported.platforms])
        return y

    runs = [("batch4", {"x:0": normal(rng, 4, 3)}), ("batch1", {"x:0": normal(rng, 1, 3)})]
    return _built(call, jax.jit(f), [tf.TensorSpec([None, 3], tf.float32, name="x")], runs, TOL_MODEL)


@case("jax_random_sort_poly_batch", "jax",
      """JAX's counter-based random numbers (jax.random.key from a fed uint32 seed: threefry in
      plain StableHLO ops), jnp.sort, jnp.argsort, jnp.where, a sum and jax.random.randint, with
      a polymorphic batch; four outputs of three dtypes. (lax.top_k is left out: jax 0.10 writes
      it as a vhlo.composite_v2, which TF 2.21's StableHLO 1.13 cannot read.)""",
      tol=TOL_MODEL, style=STYLE_JAX2TF, expect_ops=["XlaCallModule"])
def _jax_random_sort(rng):
    import jax
    import jax.numpy as jnp

    def sample(params, seed, x):
        key = jax.random.key(seed)
        y = jnp.sort(x + 0.1 * jax.random.normal(key, x.shape), axis=-1)
        order = jnp.argsort(x, axis=-1).astype(jnp.int32)
        return y, order, jnp.where(y > 0, y, 0.0).sum(), jax.random.randint(key, (3,), 0, 10)

    runs = [("batch3", {"seed:0": np.uint32(7), "x:0": normal(rng, 3, 5)}),
            ("batch1", {"seed:0": np.uint32(12345), "x:0": normal(rng, 1, 5)})]
    specs = [tf.TensorSpec([], tf.uint32, name="seed"), tf.TensorSpec([None, 5], tf.float32, name="x")]
    return _jax_case(sample, (), specs, runs, polymorphic_shapes=[None, None, "(b, 5)"])
