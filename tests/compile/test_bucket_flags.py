"""Static bucket functions keep IREE's data tiling and pad fusion (compile/buckets.py).

Those flags apply to a whole module, so when IREE failed a dispatch of the `?`-batch `main` with
them, the compile fell back without them and the static `main_b<N>` beside it lost them too
(Keras MobileNetV2's batch-1 bucket ran 1.46x its static module). A `?`-batch convolution now
takes the static patches and matmuls, and a `?`-batch dot's operand its own buffer
(dialects/dynamic_shapes.py's PACK_BARRIER), so such modules compile with both flags."""

from hlobridge.compile.driver import CompileOptions, compile_graph
from hlobridge.compile.options import DATA_TILING_FLAG, PAD_FUSION_FLAG
from tests.conftest import TESTS
from tests.corpus import Case, assert_matches


def test_a_cnn_with_buckets_compiles_with_data_tiling_and_pad_fusion():
    case = Case.load(TESTS / "conformance" / "dynamic_batch")  # Conv2D (3 channels), BN, depthwise, Dense
    model = compile_graph(case.graph_path, inputs=["x:0"], options=CompileOptions(batch_sizes=(1, 4)))
    assert "dropped_flags" not in model.stats, model.stats["dropped_flags"]
    assert {DATA_TILING_FLAG, PAD_FUSION_FLAG} <= set(model.options.iree_flags())
    module = model.load()
    for run in case.meta["runs"]:
        feeds = {k: case.array(v) for k, v in run["feeds"].items()}
        got = module.run(feeds)
        for key, ref in run["expected"].items():
            assert_matches(got[key], case.array(ref), case.tolerance, f"{run['name']} {key}")
