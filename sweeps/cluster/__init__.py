"""sweeps/cluster"""
