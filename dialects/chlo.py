"""The chlo dialect's module for the MLIR bindings' lookup (see __init__); hlobridge builds
its CHLO ops with stablehlo.chlo_unary."""
