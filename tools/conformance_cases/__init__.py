"""The conformance corpus's cases (see tools/make_conformance_corpus.py). Importing the package
registers every case in registry.CASES, in this order (TF numbers functions and gradients with
process-wide counters, so the order shows in the written graphs' names)."""

from . import ops  # noqa: F401  (registration)
from . import graphs  # noqa: F401,I001
from . import models  # noqa: F401
from . import recurrent  # noqa: F401
from . import text  # noqa: F401
from . import quant  # noqa: F401
from . import arrays  # noqa: F401
from . import random  # noqa: F401,E402
from . import audio  # noqa: F401,E402  (issue 13: audio frontends and complex numbers)
from . import detection  # noqa: F401  (issue 13: detection head, image adjust, nn gradients)
from . import linalg  # noqa: F401,I001  (issue 13 part 9: linear algebra and special math)
from . import jax_exports  # noqa: F401
from . import tensor_arrays  # noqa: F401
from . import xla_ops  # noqa: F401  (issue 30: tf2xla's Xla* ops)
from . import dynamic  # noqa: F401  (issue 31: one module for every batch and length)
