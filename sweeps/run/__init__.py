"""sweeps/run"""
