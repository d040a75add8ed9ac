"""The TX engine's stages (CompressionEngine, paper Fig. 9), one component per file."""
