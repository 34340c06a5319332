"""Reading what TensorFlow writes besides GraphDefs: SavedModels and checkpoints (TensorBundles)."""
