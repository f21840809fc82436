"""sweeps/spec"""
