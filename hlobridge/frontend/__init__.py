"""Reading what TensorFlow users have into a `Graph`: GraphDefs (text and binary), the function
library, the one loader (`load.py`) that runs parse -> inline -> functionalize, and SavedModels
and checkpoints (TensorBundles), read and written without TensorFlow."""
