"""Image and detection ops, one module per family (importing this registers them all).

  resize           ResizeBilinear, ResizeNearestNeighbor, LRN
  grads            ResizeBilinearGrad, ResizeNearestNeighborGrad, LRNGrad
  adjust           RGBToHSV, HSVToRGB, AdjustHue, AdjustSaturation, AdjustContrastv2
  crop_and_resize  CropAndResize, CropAndResizeGradImage, CropAndResizeGradBoxes
  detection        NonMaxSuppression (V1-V5, WithOverlaps), CombinedNonMaxSuppression
  stl_order        libstdc++'s priority_queue and sort, for detection's tie order (no ops)
"""

from . import adjust, crop_and_resize, detection, grads, resize  # noqa: F401  (registration)
