"""Reading what TensorFlow users have into a `Graph`: GraphDefs (text and binary), the function
library, and the one loader (`load.py`) that runs parse -> inline -> functionalize."""
