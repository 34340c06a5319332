"""The op registry, filled by importing each family module once."""

from . import (activation_grads, basic, checkpoint, control_flow, einsum, elementwise, image, layout,  # noqa: F401
               linalg, nn, reductions, segments, shapes, state, strings, variable_indexing)  # (registration)
from . import tensor_lists  # noqa: F401,E402  (registration: recurrent models)
from . import tensor_arrays  # noqa: F401,E402  (registration: TF1 TensorArrays, stacks)
from . import sparse_rows, string_edits, tables, text, unicode  # noqa: F401,E402  (registration: tables, text)
from . import quantization, uniform_quantization  # noqa: F401,E402  (registration)
from . import arrays  # noqa: F401,E402  (registration: array ops)
from . import (random_gamma_grad, random_sampling, stateful_random, stateless_random,  # noqa: F401,E402
               truncated_normal_params)  # (registration: random)
from . import crop_and_resize, detection, image_adjust, image_grads  # noqa: F401,E402  (registration: image)
from . import complex_parts, fft  # noqa: F401,E402  (registration: complex numbers and FFTs)
from . import linalg_diag, linalg_factor, linalg_solve, special_math  # noqa: F401,E402  (registration: linalg, special math)
from . import xla  # noqa: F401,E402  (registration: the Xla* ops; XlaCallModule: models exported from JAX)
from .registry import REGISTRY, OpContext, OpDef, lookup, register  # noqa: F401
