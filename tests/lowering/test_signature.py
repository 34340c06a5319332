"""The signature a compiled function carries survives its JSON round trip, bfloat16 included."""

import ml_dtypes
import numpy as np

from hlobridge.lowering.signature import Signature
from hlobridge.spec import TensorSpec


def test_signature_round_trips_through_json():
    sig = Signature([("x:0", TensorSpec(np.dtype(np.float32), (2, 3))),
                     ("v (variable)", TensorSpec(np.dtype(ml_dtypes.bfloat16), ()))],
                    [("y:0", TensorSpec(np.dtype(np.int64), (4,)))])
    back = Signature.from_json(sig.to_json())
    assert [(n, s.dtype, s.shape) for n, s in back.inputs + back.outputs] == \
        [(n, s.dtype, s.shape) for n, s in sig.inputs + sig.outputs]
