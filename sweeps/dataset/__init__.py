"""sweeps/dataset"""
