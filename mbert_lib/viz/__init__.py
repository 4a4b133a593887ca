"""Plots and tables for notebooks and reports, one topic per module."""
