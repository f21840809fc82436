"""analysis/figures"""
