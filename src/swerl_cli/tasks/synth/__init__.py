"""`swerl tasks synth`: SWE-smith-style tasks made by mutating a Python repository's functions (run.py)."""
