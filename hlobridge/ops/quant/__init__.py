"""Quantization ops (importing this registers them all).

  fake_quant  FakeQuantWithMinMax{Args,Vars,VarsPerChannel} and their gradients,
              QuantizeAndDequantizeV2/V3/V4, Dequantize
  uniform     UniformQuantize, UniformDequantize, UniformRequantize, UniformQuantizedClipByValue,
              UniformQuantizedAdd, UniformQuantizedDot, UniformQuantizedConvolution
"""

from . import fake_quant, uniform  # noqa: F401  (registration)
