"""Fault trials of the DDP hook under torchrun's elastic restarts (`make faults`):
worker.py is one rank of a trial, trials.py runs them and writes the table."""
