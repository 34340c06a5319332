#!/usr/bin/env python3
"""The Keras layer sweep: one tiny frozen model per class in `keras.layers`, each with
TensorFlow's own result, written in the corpus format to tests/keras_layers/ (graph.pb only).

    .tfvenv/bin/python tools/keras_sweep.py                 # every layer
    .tfvenv/bin/python tools/keras_sweep.py Dense LSTM      # some
    .tfvenv/bin/python tools/keras_sweep.py --check         # every class listed? (writes nothing)

The classes are enumerated from `keras.layers` (aliases such as Convolution2D folded into
their class), so a new Keras version's new layers show up: every class must be either in
LAYERS (a builder: the layer's call on inputs of tiny shapes) or in SKIPPED (a reason). LAYERS
also holds variants (NAME_variant: masked LSTM, Embedding(mask_zero) into GRU, causal
attention, dilated and causal convolutions...), the paths users take through the common layers.
Each model is wrapped as conformance_cases.models.keras_frozen does (a tf.function calling
the model with training=False, frozen with convert_variables_to_constants_v2), run once in TF
with the reference environment, and written by make_conformance_corpus.record.
tests/e2e/test_keras_layers.py runs every case under jit="auto" and jit="off".
"""

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

# tf_corpus sets the reference environment before it imports TensorFlow: import it first.
import tf_corpus  # noqa: F401

import numpy as np
import tensorflow as tf
from conformance_cases.models import keras_seed
from conformance_cases.registry import TOL_MODEL, Built, CaseDef, frozen_graph
from make_conformance_corpus import record

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "keras_layers"
STYLE = "Keras 3 layer in a one-layer model, in a tf.function (training=False), frozen"
F, I, S = "float32", "int32", "string"
IMG = ((4, 4, 3), F)  # a tiny NHWC image batch: what the image layers take


@dataclass
class Layer:
    """A layer's tiny model: `inputs` are (shape without batch, dtype); `make(L)` builds the
    layer from keras.layers `L`; `apply(layer, *xs)` calls it. `setup(layer, rng)` may set
    weights once the layer is built (a fresh BatchNormalization is the identity); `tables`:
    the layer holds lookup tables, which TF 2.21 freezes only in a v1 graph (with
    tables_initializer as the case's init_op)."""

    inputs: tuple
    make: object
    apply: object = None
    setup: object = None
    values: object = None   # (rng, shape, dtype) -> a feed; default normal floats, ids in [0, 4)
    tables: bool = False


def one(make, *inputs, **kw):
    """A layer applied to one input."""
    return Layer(inputs or (((3, 4), F),), make, **kw)


def pair(make, a=((3, 4), F), b=((3, 4), F)):
    """A layer applied to a list of two inputs (merging layers, Attention)."""
    return Layer((a, b), make, apply=lambda layer, x, y: layer([x, y]))


def qv(make, q=((3, 4), F), v=((5, 4), F)):
    """An attention layer called as layer(query, value)."""
    return Layer((q, v), make, apply=lambda layer, q_, v_: layer(q_, v_))


def image(make):
    return one(make, IMG)


def _sequential(*layers):
    """Layers chained, the way a model passes Keras masks between them."""
    import keras
    return keras.Sequential(list(layers))


def _batchnorm_stats(layer, rng):
    c = layer.gamma.shape[0]
    layer.moving_mean.assign(rng.standard_normal(c).astype(np.float32) * 0.3)
    layer.moving_variance.assign(np.abs(rng.standard_normal(c)).astype(np.float32) + 0.5)
    layer.gamma.assign(1 + rng.standard_normal(c).astype(np.float32) * 0.2)
    layer.beta.assign(rng.standard_normal(c).astype(np.float32) * 0.2)


def _pixels(rng, shape, dtype):
    return rng.uniform(0, 255, shape).astype(np.float32)


def _words(rng, shape, dtype):
    words = np.array([b"the cat", b"a dog sat", b"the", b"zebra cat"], dtype=object)
    return words[rng.integers(0, len(words), shape)]


def _sentences(rng, shape, dtype):
    return np.array([b"The cat sat", b"a dog, the DOG"][: shape[0]], dtype=object).reshape(shape)


def _masked_steps(rng, shape, dtype):
    """Sequences with masked time steps: step 1 of the first row and the last steps of the
    second are all zeros (Masking's mask_value), ids 0 for Embedding(mask_zero=True)."""
    x = rng.integers(1, 6, shape).astype(np.int32) if dtype == I else rng.standard_normal(shape).astype(np.float32)
    x[0, 1] = 0
    x[1, -2:] = 0
    return x


def pixels(make):
    """An image layer on pixel values in [0, 255] (the value_range most preprocessing expects)."""
    return one(make, IMG, values=_pixels)


LAYERS = {
    # core
    "Dense": one(lambda L: L.Dense(3, activation="relu")),
    "EinsumDense": one(lambda L: L.EinsumDense("abc,cd->abd", output_shape=(None, 3), bias_axes="d")),
    "Embedding": one(lambda L: L.Embedding(6, 3), ((5,), I)),
    "ReversibleEmbedding": one(lambda L: L.ReversibleEmbedding(6, 3), ((5,), I)),
    "Masking": one(lambda L: L.Masking(0.0)),
    "Identity": one(lambda L: L.Identity()),
    "Activation": one(lambda L: L.Activation("swish")),
    "ActivityRegularization": one(lambda L: L.ActivityRegularization(l1=0.1)),
    # activations
    "ELU": one(lambda L: L.ELU()),
    "LeakyReLU": one(lambda L: L.LeakyReLU(0.2)),
    "PReLU": one(lambda L: L.PReLU(alpha_initializer="random_uniform")),
    "ReLU": one(lambda L: L.ReLU(max_value=1.0, threshold=0.5, negative_slope=0.1)),
    "Softmax": one(lambda L: L.Softmax()),
    # attention
    "Attention": pair(lambda L: L.Attention(use_scale=True)),
    "AdditiveAttention": pair(lambda L: L.AdditiveAttention()),
    "MultiHeadAttention": qv(lambda L: L.MultiHeadAttention(num_heads=2, key_dim=2)),
    "GroupQueryAttention": qv(lambda L: L.GroupQueryAttention(head_dim=2, num_query_heads=2,
                                                              num_key_value_heads=1)),
    # convolution
    "Conv1D": one(lambda L: L.Conv1D(2, 3, padding="same"), ((5, 2), F)),
    "Conv2D": one(lambda L: L.Conv2D(2, 3, strides=2), ((5, 5, 2), F)),
    "Conv3D": one(lambda L: L.Conv3D(2, 2), ((3, 3, 3, 2), F)),
    "Conv1DTranspose": one(lambda L: L.Conv1DTranspose(2, 3, strides=2), ((4, 2), F)),
    "Conv2DTranspose": one(lambda L: L.Conv2DTranspose(2, 3, strides=2, padding="same"), ((3, 3, 2), F)),
    "Conv3DTranspose": one(lambda L: L.Conv3DTranspose(2, 2, strides=2), ((2, 2, 2, 2), F)),
    "SeparableConv1D": one(lambda L: L.SeparableConv1D(3, 3, depth_multiplier=2), ((5, 2), F)),
    "SeparableConv2D": one(lambda L: L.SeparableConv2D(3, 3, padding="same"), ((4, 4, 2), F)),
    "DepthwiseConv1D": one(lambda L: L.DepthwiseConv1D(3, depth_multiplier=2), ((5, 2), F)),
    "DepthwiseConv2D": one(lambda L: L.DepthwiseConv2D(3, padding="same"), ((4, 4, 2), F)),
    # pooling
    "MaxPooling1D": one(lambda L: L.MaxPooling1D(2), ((5, 2), F)),
    "MaxPooling2D": one(lambda L: L.MaxPooling2D(2, padding="same"), ((5, 5, 2), F)),
    "MaxPooling3D": one(lambda L: L.MaxPooling3D(2), ((4, 4, 4, 1), F)),
    "AveragePooling1D": one(lambda L: L.AveragePooling1D(2, padding="same"), ((5, 2), F)),
    "AveragePooling2D": one(lambda L: L.AveragePooling2D(2, padding="same"), ((5, 5, 2), F)),
    "AveragePooling3D": one(lambda L: L.AveragePooling3D(2), ((4, 4, 4, 1), F)),
    "GlobalMaxPooling1D": one(lambda L: L.GlobalMaxPooling1D(), ((5, 2), F)),
    "GlobalMaxPooling2D": one(lambda L: L.GlobalMaxPooling2D(), ((4, 4, 2), F)),
    "GlobalMaxPooling3D": one(lambda L: L.GlobalMaxPooling3D(), ((3, 3, 3, 2), F)),
    "GlobalAveragePooling1D": one(lambda L: L.GlobalAveragePooling1D(), ((5, 2), F)),
    "GlobalAveragePooling2D": one(lambda L: L.GlobalAveragePooling2D(keepdims=True), ((4, 4, 2), F)),
    "GlobalAveragePooling3D": one(lambda L: L.GlobalAveragePooling3D(), ((3, 3, 3, 2), F)),
    "AdaptiveAveragePooling1D": one(lambda L: L.AdaptiveAveragePooling1D(2), ((5, 2), F)),
    "AdaptiveAveragePooling2D": one(lambda L: L.AdaptiveAveragePooling2D(2), ((5, 5, 2), F)),
    "AdaptiveAveragePooling3D": one(lambda L: L.AdaptiveAveragePooling3D(2), ((4, 4, 4, 1), F)),
    "AdaptiveMaxPooling1D": one(lambda L: L.AdaptiveMaxPooling1D(2), ((5, 2), F)),
    "AdaptiveMaxPooling2D": one(lambda L: L.AdaptiveMaxPooling2D(2), ((5, 5, 2), F)),
    "AdaptiveMaxPooling3D": one(lambda L: L.AdaptiveMaxPooling3D(2), ((4, 4, 4, 1), F)),
    # normalization
    "BatchNormalization": one(lambda L: L.BatchNormalization(), setup=_batchnorm_stats),
    "LayerNormalization": one(lambda L: L.LayerNormalization()),
    "GroupNormalization": one(lambda L: L.GroupNormalization(groups=2)),
    "UnitNormalization": one(lambda L: L.UnitNormalization()),
    "RMSNormalization": one(lambda L: L.RMSNormalization()),
    "SpectralNormalization": one(lambda L: L.SpectralNormalization(L.Dense(3))),
    # regularization: the identity in inference
    "Dropout": one(lambda L: L.Dropout(0.5)),
    "AlphaDropout": one(lambda L: L.AlphaDropout(0.5)),
    "GaussianDropout": one(lambda L: L.GaussianDropout(0.5)),
    "GaussianNoise": one(lambda L: L.GaussianNoise(1.0)),
    "SpatialDropout1D": one(lambda L: L.SpatialDropout1D(0.5)),
    "SpatialDropout2D": one(lambda L: L.SpatialDropout2D(0.5), IMG),
    "SpatialDropout3D": one(lambda L: L.SpatialDropout3D(0.5), ((2, 2, 2, 2), F)),
    # reshaping
    "Reshape": one(lambda L: L.Reshape((2, 6))),
    "Flatten": one(lambda L: L.Flatten(), ((2, 3, 2), F)),
    "Permute": one(lambda L: L.Permute((2, 1))),
    "RepeatVector": one(lambda L: L.RepeatVector(2), ((3,), F)),
    "Cropping1D": one(lambda L: L.Cropping1D((1, 2)), ((5, 2), F)),
    "Cropping2D": one(lambda L: L.Cropping2D(((1, 0), (0, 2))), ((4, 4, 2), F)),
    "Cropping3D": one(lambda L: L.Cropping3D(1), ((4, 4, 4, 1), F)),
    "UpSampling1D": one(lambda L: L.UpSampling1D(2)),
    "UpSampling2D": image(lambda L: L.UpSampling2D(2, interpolation="bilinear")),
    "UpSampling3D": one(lambda L: L.UpSampling3D(2), ((2, 2, 2, 1), F)),
    "ZeroPadding1D": one(lambda L: L.ZeroPadding1D((1, 2))),
    "ZeroPadding2D": image(lambda L: L.ZeroPadding2D(((1, 0), (2, 1)))),
    "ZeroPadding3D": one(lambda L: L.ZeroPadding3D(1), ((2, 2, 2, 1), F)),
    # merging
    **{name: pair(lambda L, name=name: getattr(L, name)())
       for name in ("Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum")},
    "Concatenate": pair(lambda L: L.Concatenate(axis=1), b=((2, 4), F)),
    "Dot": pair(lambda L: L.Dot(axes=2, normalize=True), b=((5, 4), F)),
    # recurrent
    "LSTM": one(lambda L: L.LSTM(3, return_sequences=True)),
    "GRU": one(lambda L: L.GRU(3)),
    "SimpleRNN": one(lambda L: L.SimpleRNN(3, go_backwards=True)),
    "Bidirectional": one(lambda L: L.Bidirectional(L.LSTM(2, return_sequences=True))),
    "RNN": one(lambda L: L.RNN(L.SimpleRNNCell(3))),
    "LSTMCell": one(lambda L: L.RNN(L.LSTMCell(3))),
    "GRUCell": one(lambda L: L.RNN(L.GRUCell(3))),
    "SimpleRNNCell": one(lambda L: L.RNN(L.SimpleRNNCell(2), return_sequences=True)),
    "StackedRNNCells": one(lambda L: L.RNN(L.StackedRNNCells([L.GRUCell(3), L.LSTMCell(2)]))),
    "ConvLSTM1D": one(lambda L: L.ConvLSTM1D(2, 3, padding="same"), ((3, 4, 2), F)),
    "ConvLSTM2D": one(lambda L: L.ConvLSTM2D(2, 3), ((2, 4, 4, 1), F)),
    "ConvLSTM3D": one(lambda L: L.ConvLSTM3D(2, 2), ((2, 3, 3, 3, 1), F)),
    "TimeDistributed": one(lambda L: L.TimeDistributed(L.Dense(3))),
    # variants beyond one model per class: the paths users take through the common layers
    "LSTM_masked": one(lambda L: _sequential(L.Masking(0.0), L.LSTM(3, return_sequences=True)),
                       ((4, 2), F), values=_masked_steps),
    "GRU_mask_zero": one(lambda L: _sequential(L.Embedding(6, 3, mask_zero=True), L.GRU(3)), ((4,), I),
                         values=_masked_steps),
    "LSTM_return_state": one(lambda L: L.LSTM(3, return_state=True, go_backwards=True)),
    "GRU_reset_before": one(lambda L: L.GRU(3, reset_after=False, return_sequences=True)),
    "MultiHeadAttention_causal": Layer((((3, 4), F),), lambda L: L.MultiHeadAttention(num_heads=2, key_dim=2),
                                       apply=lambda layer, x: layer(x, x, use_causal_mask=True)),
    "Conv1D_causal_dilated": one(lambda L: L.Conv1D(2, 2, padding="causal", dilation_rate=2), ((6, 2), F)),
    "Conv2D_dilated_same": one(lambda L: L.Conv2D(2, 2, dilation_rate=2, padding="same"), ((5, 5, 2), F)),
    "DepthwiseConv2D_strided": one(lambda L: L.DepthwiseConv2D(3, strides=2, depth_multiplier=2), ((5, 5, 2), F)),
    "UpSampling2D_nearest": image(lambda L: L.UpSampling2D((2, 3))),
    "BatchNormalization_image": Layer((IMG,), lambda L: L.BatchNormalization(), setup=_batchnorm_stats),
    # preprocessing (inference mode)
    "Normalization": one(lambda L: L.Normalization(mean=[0.5, -1, 0, 2], variance=[1, 4, 0.25, 2])),
    "Rescaling": pixels(lambda L: L.Rescaling(1 / 127.5, offset=-1)),
    "CenterCrop": image(lambda L: L.CenterCrop(2, 3)),
    "Resizing": image(lambda L: L.Resizing(3, 5)),
    "Discretization": one(lambda L: L.Discretization(bin_boundaries=[-1.0, 0.0, 0.5])),
    "CategoryEncoding": one(lambda L: L.CategoryEncoding(4, output_mode="count"), ((3,), I)),
    "Hashing": one(lambda L: L.Hashing(5), ((3,), S), values=_words),
    "HashedCrossing": pair(lambda L: L.HashedCrossing(7), ((), I), ((), I)),
    "StringLookup": one(lambda L: L.StringLookup(vocabulary=["the", "cat", "a dog sat"]), ((3,), S),
                        values=_words, tables=True),
    "IntegerLookup": one(lambda L: L.IntegerLookup(vocabulary=[3, 1, 7]), ((3,), I), tables=True),
    "TextVectorization": one(lambda L: L.TextVectorization(vocabulary=["the", "cat", "dog"],
                                                           output_sequence_length=4), ((), S),
                             values=_sentences, tables=True),
    # image preprocessing: inference mode leaves the random ones the identity
    "RandomFlip": image(lambda L: L.RandomFlip()),
    "RandomRotation": image(lambda L: L.RandomRotation(0.2)),
    "RandomZoom": image(lambda L: L.RandomZoom(0.2)),
    "RandomTranslation": image(lambda L: L.RandomTranslation(0.2, 0.2)),
    "RandomCrop": image(lambda L: L.RandomCrop(2, 3)),
    "RandomContrast": pixels(lambda L: L.RandomContrast(0.5)),
    "RandomBrightness": pixels(lambda L: L.RandomBrightness(0.5)),
    "RandomColorJitter": pixels(lambda L: L.RandomColorJitter(brightness_factor=0.2)),
    "RandomShear": pixels(lambda L: L.RandomShear(0.2)),
    **{name: pixels(lambda L, name=name: getattr(L, name)())  # their defaults
       for name in ("RandomInvert", "RandomPerspective", "RandomElasticTransform", "RandomErasing",
                    "RandomGaussianBlur", "AugMix", "RandAugment", "CutMix", "AutoContrast")},
    "Solarization": pixels(lambda L: L.Solarization(threshold_factor=0.5)),
    "Equalization": pixels(lambda L: L.Equalization(bins=8)),
    "ContrastLimitedAdaptiveHistogramEqualization": pixels(
        lambda L: L.ContrastLimitedAdaptiveHistogramEqualization(tile_grid_size=(2, 2))),
    "Pipeline": pixels(lambda L: L.Pipeline([L.RandomFlip(), L.Rescaling(0.5)])),
    # audio
    "STFTSpectrogram": one(lambda L: L.STFTSpectrogram(frame_length=8, frame_step=4, fft_length=8),
                           ((32, 1), F)),
    "MelSpectrogram": one(lambda L: L.MelSpectrogram(fft_length=16, sequence_stride=8, num_mel_bins=4,
                                                     sampling_rate=800), ((64,), F)),
}

SKIPPED = {
    "Layer": "the base class: no computation of its own",
    "Wrapper": "an abstract base class (Bidirectional and TimeDistributed are swept)",
    "InputLayer": "every model has one: keras.Input makes a Placeholder",
    "Lambda": "runs user code: whatever ops that code uses",
    "TFSMLayer": "loads a SavedModel: the sweep of SavedModels is the corpus's, not a layer's",
    "FlaxLayer": "wraps a JAX/Flax module: needs the JAX backend",
    "JaxLayer": "wraps a JAX function: needs the JAX backend",
    "TorchModuleWrapper": "wraps a torch.nn.Module: needs the PyTorch backend",
    **{name: "TensorFlow cannot freeze it: its call updates its SeedGenerator's state "
              "(AssignVariableOp) even with training=False, and convert_variables_to_constants_v2 "
              "fails on that write"
       for name in ("RandomHue", "RandomSaturation", "RandomColorDegeneration", "RandomGrayscale",
                    "RandomPosterization", "RandomSharpness", "MixUp")},
    "MaxNumBoundingBoxes": "bounding-box preprocessing on a dict of boxes and labels, not a tensor model",
}


def layer_classes(keras):
    """Every Layer class keras.layers exports, one name per class (the shortest alias: the
    Keras name of MaxPool2D is MaxPooling2D, whose alias MaxPool2D is shorter; the sweep names
    the class by its __name__ where that is exported)."""
    by_class = {}
    for name in dir(keras.layers):
        cls = getattr(keras.layers, name)
        if isinstance(cls, type) and issubclass(cls, keras.layers.Layer):
            by_class.setdefault(cls, []).append(name)
    return sorted(cls.__name__ if cls.__name__ in names else min(names, key=len)
                  for cls, names in by_class.items())


def unlisted(keras):
    return [n for n in layer_classes(keras) if n not in LAYERS and n not in SKIPPED]


def case_name(layer):
    return f"keras_layer_{layer}"


def _feed(spec, rng, shape, dtype):
    if spec.values:
        return spec.values(rng, shape, dtype)
    if dtype == I:
        return rng.integers(0, 4, shape).astype(np.int32)
    return rng.standard_normal(shape).astype(np.float32)


def _call(spec, layer, xs):
    return spec.apply(layer, *xs) if spec.apply else layer(*xs)


def builder(spec):
    """The layer is called directly in the tf.function (no keras.Model: Keras 3.15's
    functional API rejects some preprocessing layers on symbolic inputs), with
    training=False; it is built first by one eager call on the run's feeds."""
    def build(rng) -> Built:
        keras = keras_seed(rng)
        feeds = [_feed(spec, rng, (2, *shape), dtype) for shape, dtype in spec.inputs]
        runs = [("batch2", {f"x{i}:0": v for i, v in enumerate(feeds)})]
        if spec.tables:
            return _v1_tables(spec, rng, feeds)
        layer = spec.make(keras.layers)
        _call(spec, layer, [tf.constant(v) for v in feeds])
        if spec.setup:
            spec.setup(layer, rng)
        specs = [tf.TensorSpec([None, *shape], tf.as_dtype(dtype), name=f"x{i}")
                 for i, (shape, dtype) in enumerate(spec.inputs)]

        graph_def, outputs, _ = frozen_graph(lambda *xs: _call(spec, _Inference(layer), xs), *specs)
        return Built(graph_def, outputs, runs)
    return build


class _Inference:
    """Calls the layer with training=False."""

    def __init__(self, layer):
        self.layer = layer

    def __call__(self, *args, **kwargs):
        return self.layer(*args, **kwargs, training=False)


def _v1_tables(spec, rng, feeds):
    from conformance_cases.text import keras_v1_frozen

    def build(keras):
        xs = [tf.compat.v1.placeholder(tf.as_dtype(dtype), [None, *shape], name=f"x{i}")
              for i, (shape, dtype) in enumerate(spec.inputs)]
        y = _Inference(spec.make(keras.layers))(*xs)
        return ({f"x{i}": x for i, x in enumerate(xs)}, {"y": y},
                [("batch2", {f"x{i}": v for i, v in enumerate(feeds)})])
    return keras_v1_frozen(rng, build)


def case_def(layer_name):
    spec = LAYERS[layer_name]
    shapes = ", ".join(f"{dtype}[batch, {', '.join(map(str, shape))}]" for shape, dtype in spec.inputs)
    return CaseDef(case_name(layer_name), "keras_layers",
                   f"keras.layers.{layer_name} in a one-layer model on {shapes}, frozen.",
                   STYLE, TOL_MODEL, builder(spec))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("layers", nargs="*", help="layer class names (default: every one in LAYERS)")
    p.add_argument("--out", default=str(DEFAULT_OUT))
    p.add_argument("--check", action="store_true", help="only check every class is listed")
    args = p.parse_args(argv)
    import keras
    missing = unlisted(keras)
    if missing:
        print(f"keras {keras.__version__} has layer classes the sweep does not list: {missing}")
        return 1
    if args.check:
        print(f"keras {keras.__version__}: {len(LAYERS)} layers swept, {len(SKIPPED)} skipped")
        return 0
    write_cases(args.layers or list(LAYERS), case_def, Path(args.out))
    return 0


def write_cases(names, case_def, out_dir: Path, **record_options) -> dict:
    """Record each named case (graph.pb only); one TensorFlow cannot build, freeze or run is
    reported, not fatal. Returns {name: why} for those (tools/keras_hub_sweep.py shares it)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    failed = {}
    for name in names:
        try:
            record(case_def(name), out_dir, text=False, **record_options)
        except Exception as e:  # noqa: BLE001  (TF cannot build or freeze it: reported, not fatal)
            failed[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            print(f"FAILED in TensorFlow: {name}: {failed[name]}")
    total = sum(f.stat().st_size for f in out_dir.rglob("*") if f.is_file())
    print(f"{len(names) - len(failed)} cases written, {total} bytes in {out_dir}")
    for name, why in failed.items():
        print(f"  not written: {name}: {why}")
    return failed


if __name__ == "__main__":
    sys.exit(main())
