"""Figures and tables made from a job's results."""
