"""The TX engine's stages (CompressionEngine, paper Fig. 9), one component per file:
ingress, dispatcher, front, group_former, feeder, comp_writer, finisher, egress; the
payloads of the streams between them in ``layouts``."""
