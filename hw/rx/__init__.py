"""The RX engine's stages (DecompressionEngine, paper Fig. 10), one component per file:
ingress, hold, front, feed, words, back, egress; the payloads and register interfaces
between them in ``layouts``."""
