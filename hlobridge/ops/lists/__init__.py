"""Lists of tensors: TF2's TensorLists and TF1's TensorArrays and stacks (importing this registers
them all).

  values         what a list (a DT_VARIANT tensor) is at each stage: spec, value, IR (no ops)
  tensor_lists   EmptyTensorList, TensorListReserve, TensorListFromTensor, TensorList{GetItem,
                 SetItem, PushBack, PopBack, Stack, Gather, Scatter*, Concat*, Split, Length,
                 ElementShape, Resize}; list forms of ZerosLike and AddN
  tensor_arrays  TensorArray{,Grad,Read,Write,Gather,Scatter,Concat,Split,Size,Close}{V2,V3},
                 StackV2, StackPushV2, StackPopV2, StackCloseV2 (run on tensor_lists' rules)
"""

from . import tensor_lists  # noqa: F401,I001  (registration; first: TensorArrays run on its rules)
from . import tensor_arrays  # noqa: F401  (registration)
