"""hlobridge's conformance corpus (tests/conformance, written by
tools/make_conformance_corpus.py with TensorFlow): every case, compiled (jit="auto") and on
reference kernels (jit="off"), judged by the corpus rules of tests/corpus.py.

Under "auto" the clustering minimum is 1, so that the small cases compile what they can
instead of falling under the default minimum cluster size of 4; a cluster that fails to compile
(a JitFallbackWarning, which TF would swallow) fails the case, and so does a case in which
nothing compiled at all ("auto" would then test nothing "off" does not). "auto" reads
graph.pbtxt and "off" graph.pb, so both readers meet every graph.
"""

import json
from pathlib import Path

import pytest

from hlobridge.runtime.session import Session

from tests.corpus import Case, check_case
from tests.conftest import TEST_BACKEND, TESTS

CONFORMANCE = TESTS / "conformance"
CASES = sorted(d.name for d in CONFORMANCE.iterdir() if (d / "case.json").is_file())

# Op types the corpus must hold, by issue 4's families: a regenerated corpus that loses one of
# them fails here, not silently.
REQUIRED_OPS = {
    "elementwise": "Erf Erfc Rsqrt Softplus Sigmoid Tanh Relu6 Elu Selu LeakyRelu Exp Log Pow Equal Less "
                   "GreaterEqual LogicalAnd LogicalOr LogicalNot Cast Bitcast SquaredDifference",
    "reduction": "Sum Mean Max Min Prod All Any ArgMax ArgMin",
    "shape": "Reshape Transpose ConcatV2 Split SplitV Pack Unpack Slice StridedSlice Tile ExpandDims Squeeze "
             "Pad PadV2 MirrorPad Fill ZerosLike OnesLike Range Gather GatherV2 GatherNd ScatterNd OneHot "
             "Select SelectV2 ReverseV2 Cumsum Cumprod TopKV2",
    "nn": "Conv2D Conv3D DepthwiseConv2dNative Conv2DBackpropInput Conv2DBackpropFilter MaxPool AvgPool "
          "MaxPoolGrad AvgPoolGrad FusedBatchNorm FusedBatchNormV2 FusedBatchNormV3 FusedBatchNormGradV3 "
          "Softmax LogSoftmax SparseSoftmaxCrossEntropyWithLogits BatchMatMul BatchMatMulV2 BatchMatMulV3 "
          "Einsum ResizeBilinear ResizeNearestNeighbor LRN",
    "fused": "_FusedMatMul _FusedConv2D _FusedBatchNormEx",
    "control_flow_v2": "If StatelessIf StatelessWhile StatelessCase Assert",
    "control_flow_v1": "Enter Exit Merge Switch NextIteration LoopCond",
    "functions": "PartitionedCall StatefulPartitionedCall",
    "random": "StatelessRandomGetKeyCounter StatelessRandomGetKeyCounterAlg StatelessRandomUniformV2 "
              "StatelessRandomNormalV2 StatelessTruncatedNormalV2 StatelessRandomUniformIntV2 "
              "StatelessRandomUniformFullIntV2 StatelessRandomUniform StatelessRandomNormal StatelessTruncatedNormal "
              "StatelessRandomUniformInt StatelessRandomUniformFullInt StatelessMultinomial RngReadAndSkip "
              "StatefulUniform Multinomial RandomShuffle ParameterizedTruncatedNormal "
              "StatelessParameterizedTruncatedNormal RandomGammaGrad StochasticCastToInt",
    "train": "VarHandleOp ResourceApplyAdam ResourceApplyCenteredRMSProp ResourceApplyAdagrad "
             "ResourceApplyMomentum ResourceScatterAdd",
    "recurrent": "TensorListReserve TensorListFromTensor TensorListStack TensorListGetItem TensorListSetItem "
                 "EmptyTensorList TensorListPushBack TensorListPopBack TensorListGather TensorListSplit",
    "tensor_arrays": "TensorArrayV3 TensorArrayReadV3 TensorArrayWriteV3 TensorArrayGatherV3 TensorArrayScatterV3 "
                     "TensorArrayConcatV3 TensorArraySplitV3 TensorArraySizeV3 TensorArrayCloseV3 TensorArrayGradV3 "
                     "StackV2 StackPushV2 StackPopV2",
    "text": "HashTableV2 LookupTableImportV2 LookupTableFindV2 StringToHashBucketFast StringLower StaticRegexReplace "
            "StringSplitV2 RaggedTensorToTensor",
    "quantization": "FakeQuantWithMinMaxArgs FakeQuantWithMinMaxVars FakeQuantWithMinMaxVarsPerChannel",
    "optimizers": "ResourceApplyFtrl ResourceApplyFtrlV2 ResourceApplyProximalAdagrad ResourceApplyAdagradDA "
                  "ResourceApplyProximalGradientDescent ResourceApplyAdaMax ResourceApplyAddSign "
                  "ResourceApplyPowerSign ResourceApplyKerasMomentum",
    "arrays": "Roll ReverseSequence LowerBound UpperBound Bucketize LinSpace ExtractImagePatches InTopKV2 "
              "SpaceToBatch BatchToSpace SparseToDense Bincount DenseBincount TensorStridedSliceUpdate "
              "MirrorPadGrad UniqueV2 ListDiff DynamicPartition",
    "audio": "RFFT IRFFT ComplexAbs Real Imag Complex BroadcastArgs",
    "complex": "FFT2D IFFT2D RFFT3D IRFFT3D Conj ConjugateTranspose Angle",
    "detection": "NonMaxSuppressionV4 NonMaxSuppressionV5 CombinedNonMaxSuppression CropAndResize",
    "image": "AdjustContrastv2 AdjustHue AdjustSaturation RGBToHSV HSVToRGB",
    "nn_grads": "MaxPoolGradGrad MaxPoolGradGradV2 MaxPool3DGradGrad MaxPoolGradV2 MaxPool3DGrad AvgPool3DGrad "
                "Conv3DBackpropInputV2 Conv3DBackpropFilterV2 LRNGrad ResizeBilinearGrad ResizeNearestNeighborGrad",
    "linalg": "Cholesky MatrixTriangularSolve MatrixSolve MatrixInverse Qr Svd SelfAdjointEigV2 MatrixDiagPartV3 "
              "MatrixSetDiagV3 MatrixDiagV3",
    "special_math": "Lgamma Digamma Igamma Igammac RandomGammaGrad Betainc Erfinv Ndtri BesselI0e BesselI1e Polygamma Zeta "
                    "NextAfter CumulativeLogsumexp Cross PopulationCount Invert",
    "jax": "XlaCallModule",
}


def _session(case, jit, backend=TEST_BACKEND):
    if jit == "auto":
        return Session(case.graph_path, jit="auto", cache_dir=False, min_cluster_size=1, backend=backend)
    return Session(case.path / case.meta["graph_pb"], jit="off", cache_dir=False)


@pytest.mark.parametrize("jit", ["auto", "off"])
@pytest.mark.parametrize("name", CASES)
def test_conformance_case(name, jit, executor):
    executor(CASES.index(name))  # every other case on the thread pool, however small
    case = Case.load(CONFORMANCE / name)
    session = _session(case, jit)
    check_case(case, session)
    if jit == "auto":
        compiled = [e for e in session.compile_events if e.source != "fallback"]
        assert compiled, f"{name}: jit='auto' compiled no cluster; every op ran on its reference kernel"


def test_corpus_covers_every_family():
    ops_by_family: dict = {}
    for name in CASES:
        family = json.loads((CONFORMANCE / name / "case.json").read_text())["family"]
        ops = json.loads((CONFORMANCE / name / "ops.json").read_text())["distinct_op_types"]
        ops_by_family.setdefault(family, set()).update(ops)
    every_op = set().union(*ops_by_family.values())
    missing = {family: sorted(set(ops.split()) - every_op) for family, ops in REQUIRED_OPS.items()}
    assert not any(missing.values()), f"op types missing from the corpus: {missing}"
    assert set(REQUIRED_OPS) <= set(ops_by_family), sorted(ops_by_family)
    keras = {name for name in CASES if name.startswith("keras_")}
    assert len(keras) >= 4, keras


def test_corpus_has_error_runs_and_edge_cases():
    """The protocol extensions are exercised: failing-assertion runs, zero-trip loops, empty
    batches."""
    runs = [(name, run) for name in CASES
            for run in json.loads((CONFORMANCE / name / "case.json").read_text()).get("runs", [])]
    assert sum("expected_error" in run for _, run in runs) >= 4
    assert sum("zero_trip" in run["name"] for _, run in runs) >= 2
    assert sum("empty" in run["name"] for _, run in runs) >= 10
