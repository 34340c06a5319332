"""The precision stage on a real graph: cnn_infer_bn (convolutions, a depthwise convolution,
batch norm, pooling, a dense layer, softmax) compiled with f32 compute, then in bf16 and f16.

The low-precision results must stay near the f32 ones (within what bf16's 8 and f16's 11
significant bits allow on logits of magnitude ~2), predict the same classes, and differ
from f32 at all: a pass that changed nothing would pass the tolerance alone.
"""

import numpy as np
import pytest

import hlobridge
from hlobridge.cli import compile as compile_cli
from hlobridge.compile.driver import CompileOptions, compile_graph
from hlobridge.errors import HlobridgeError

from tests.corpus import Case

# Measured on 2026-11-23: bf16 logits within 0.0080, probabilities within 0.00083; f16 within
# 0.00094 and 0.00012 (the softmax is an output's elementwise tail: it stays f32). The bounds
# leave ~4x headroom.
TOLERANCE = {"bf16": {"logits": 0.03, "probs": 0.004}, "f16": {"logits": 0.004, "probs": 0.0005}}


@pytest.fixture(scope="module")
def cnn(shared_graphs):
    case = Case.load(shared_graphs / "cnn_infer_bn")
    run = case.meta["runs"][0]
    feeds = {name: case.array(key) for name, key in run["feeds"].items()}
    return case, feeds


def _run(case, feeds, precision):
    model = compile_graph(str(case.graph_path), input_shapes={"images:0": feeds["images:0"].shape},
                          options=CompileOptions(precision=precision))
    return model, model.load("cpu").run(feeds)


@pytest.fixture(scope="module")
def f32_outputs(cnn):
    return _run(*cnn, "f32")[1]


@pytest.mark.parametrize("precision", ["bf16", "f16"])
def test_low_precision_stays_near_f32(cnn, f32_outputs, precision):
    model, outs = _run(*cnn, precision)
    assert f"x{precision}>" in model.stablehlo
    for name, kind in (("Identity:0", "logits"), ("Identity_1:0", "probs")):
        diff = np.abs(outs[name] - f32_outputs[name]).max()
        assert 0 < diff <= TOLERANCE[precision][kind], f"{precision} {name}: {diff}"
        assert (outs[name].argmax(axis=1) == f32_outputs[name].argmax(axis=1)).all()
        assert outs[name].dtype == np.float32


def test_precision_option_on_the_cli(cnn, tmp_path):
    case, feeds = cnn
    shape = ",".join(map(str, feeds["images:0"].shape))
    out = tmp_path / "bf16.mlir"
    assert compile_cli.main([str(case.graph_path), "--precision=bf16", "--emit", "stablehlo",
                             "-o", str(out), "--input-shape", f"images:0={shape}"]) == 0
    text = out.read_text()
    # Dots and convolutions: bf16 operands, f32 results (f32 accumulation).
    assert "xbf16>) -> tensor<4x10xf32>" in text
    assert "stablehlo.reduce(" in text and "bf16" in text
    with pytest.raises(SystemExit):
        compile_cli.parse_arguments([str(case.graph_path), "-o", "x", "--precision=f8"])


def test_precision_in_the_session_jit(cnn, f32_outputs):
    case, feeds = cnn
    sess = hlobridge.Session(str(case.graph_path), cache_dir=False,
                             compile_options=CompileOptions(precision="bf16"))
    probs = sess.run("Identity_1:0", feeds)
    diff = np.abs(probs - f32_outputs["Identity_1:0"]).max()
    assert 0 < diff <= TOLERANCE["bf16"]["probs"]


def test_training_in_bf16_follows_tensorflow(shared_graphs):
    """mlp_adam's Adam updates are the variables' elementwise tails, so they stay f32: computed
    in bf16 they rounded every weight to bf16 each step (losses 137% off after 10 steps)."""
    case = Case.load(shared_graphs / "mlp_adam")
    sess = hlobridge.Session(str(case.graph_path), cache_dir=False,
                             compile_options=CompileOptions(precision="bf16"))
    sess.run(case.meta["init_op"], case.init_feeds())
    steps = 6
    losses = np.array([sess.run([case.meta["train_op"], case.meta["loss"]], case.step_feeds(s))[1]
                       for s in range(steps)])
    want = case.array(case.meta["train"]["loss_per_step"])[:steps]
    relative = np.abs(losses - want) / np.abs(want)
    assert relative.max() <= 0.02, relative  # measured: 0.0045 over 10 steps
    assert relative.max() > 1e-5  # f32 is within 3e-7: bf16 did run
    assert not any(e.source == "fallback" for e in sess.compile_events)


INTEGER_SOURCE = """
func.func @main(%i: tensor<64xi32>, %x: tensor<64xf32>) -> tensor<f32> {
  %f = stablehlo.convert %i : (tensor<64xi32>) -> tensor<64xf32>
  %m = stablehlo.multiply %x, %f : tensor<64xf32>
  %e = stablehlo.exponential %m : tensor<64xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%e init: %init) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}
"""


def test_integer_sources_still_link_in_bf16():
    """int -> f32 -> bf16 makes IREE 3.13's llvm-cpu call __truncsfbf2, which it cannot link;
    the precision stage leaves ops reading integer converts in f32, so this compiles."""
    from iree.compiler import ir

    from hlobridge.compile.driver import compile_mlir
    from hlobridge.passes.ir import pipeline
    with ir.Context():
        module = ir.Module.parse(INTEGER_SOURCE)
        pipeline.run(module, pipeline.build("bf16"))
        text = module.operation.get_asm()
    assert "tensor<64xbf16>" in text
    assert compile_mlir(text, CompileOptions())


def test_unknown_precision_is_an_error():
    with pytest.raises(HlobridgeError, match="precision must be one of f32, bf16, f16"):
        CompileOptions(precision="f8").stages()


def test_batch_norm_and_softmax_stay_f32_as_keras_mixed_bfloat16_keeps_them(cnn):
    """Keras' mixed_bfloat16: BatchNormalization and the softmax compute in f32, the
    convolutions in bf16 (KERAS_F32_OPS); no hlobridge mark reaches IREE."""
    from hlobridge.compile.driver import lower_graph
    case, feeds = cnn
    lowered = lower_graph(str(case.graph_path), input_shapes={"images:0": feeds["images:0"].shape},
                          stages=CompileOptions(precision="bf16").stages())
    with lowered.context:
        text = lowered.module.operation.get_asm(enable_debug_info=True, use_local_scope=True)
    lines = text.splitlines()
    of = lambda node: [ln for ln in lines if f'loc("{node}")' in ln and "stablehlo." in ln]  # noqa: E731
    assert of("FusedBatchNormV3") and not any("bf16" in ln for ln in of("FusedBatchNormV3"))
    assert of("Softmax") and not any("bf16" in ln for ln in of("Softmax"))
    assert any("bf16" in ln for ln in of("Conv2D_1"))
    assert "keep_f32" not in text
    plain = lower_graph(str(case.graph_path), input_shapes={"images:0": feeds["images:0"].shape}).text()
    assert "keep_f32" not in plain and "bf16" not in plain
