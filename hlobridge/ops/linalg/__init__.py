"""Linear algebra on the innermost matrices, one module per family (importing this registers
them all).

  band_part  MatrixBandPart
  diag       MatrixDiag, MatrixDiagPart, MatrixSetDiag (V1, V2, V3), Diag, DiagPart
  solve      Cholesky, MatrixTriangularSolve, MatrixSolve, MatrixInverse, TridiagonalSolve,
             TridiagonalMatMul, Cross
  factor     Qr, SelfAdjointEigV2, Svd
  einsum     Einsum
  blocks     the StableHLO building blocks solve and factor share (no ops)
"""

from . import band_part, diag, einsum, factor, solve  # noqa: F401  (registration)
