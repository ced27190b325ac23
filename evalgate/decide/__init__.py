"""Deciding: the verdict, its statistics, the comparison with a baseline, planning a suite's size."""
