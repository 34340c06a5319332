"""Random numbers on TensorFlow's Philox streams, bit for bit (importing this registers them all;
the stateful RandomUniform & co. are control/state.py's, on philox.py's streams).

  philox            TensorFlow's CPU Philox streams and samplers in NumPy (no ops)
  philox_hlo        the same streams in StableHLO (no ops)
  stateless         StatelessRandom{Uniform,Normal,UniformInt,UniformFullInt}(V2),
                    StatelessTruncatedNormal(V2), StatelessRandomGetKeyCounter(Alg), ...GetAlg
  stateful          RngReadAndSkip, RngSkip, StatefulUniform(Int/FullInt),
                    StatefulStandardNormalV2, StatefulTruncatedNormal (tf.random.Generator)
  sampling          Multinomial, StatelessMultinomial, RandomShuffle, StochasticCastToInt
  truncated_normal  ParameterizedTruncatedNormal, StatelessParameterizedTruncatedNormal
  gamma_grad        d sample / d alpha of Gamma samples (RandomGammaGrad's kernel; no ops)
"""

from . import gamma_grad, sampling, stateful, stateless, truncated_normal  # noqa: F401  (registration)
