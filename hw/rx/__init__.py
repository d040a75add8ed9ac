"""The RX engine's stages (DecompressionEngine, paper Fig. 10), one component per file."""
