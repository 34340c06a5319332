"""Math ops: elementwise arithmetic and its gradients, reductions, segment reductions, complex
numbers, FFTs and special functions, one module per family (importing this registers them all).

  elementwise       one generic rule per arity plus tables: Neg, Exp, Relu, Cast, Add, Mul, Pow,
                    comparisons, logical and bitwise ops, AddN, ClipByValue, Select(V2), ...
  activation_grads  ReluGrad, Relu6Grad, SigmoidGrad, TanhGrad, SoftplusGrad, RsqrtGrad, SqrtGrad,
                    ReciprocalGrad, InvGrad, EluGrad, SeluGrad, SoftsignGrad, LeakyReluGrad
  reductions        Sum, Prod, Max, Min, All, Any, Mean, EuclideanNorm, L2Loss, ArgMax, ArgMin
  segments          UnsortedSegmentSum/Prod/Max/Min, SegmentSum/Prod/Max/MinV2
  complex_parts     Complex, Real, Imag, Conj, ComplexAbs, Angle, ConjugateTranspose
  fft               FFT, IFFT, RFFT, IRFFT and their 2-D and 3-D forms
  special           Lgamma, Digamma, Erfinv, Ndtri, BesselI0e/I1e, Igamma(c), IgammaGradA, Betainc,
                    Polygamma, Zeta, NextAfter, RandomGammaGrad, ApproximateEqual, Invert,
                    PopulationCount, CumulativeLogsumexp
  special_kernels   their NumPy reference kernels, in float64 (no ops)
  incomplete        the incomplete gamma and beta functions lowered (no ops)
"""

from . import elementwise  # noqa: F401,I001  (registration; first: the others extend its tables)
from . import activation_grads, complex_parts, fft, reductions, segments, special  # noqa: F401  (registration)
