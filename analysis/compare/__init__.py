"""analysis/compare"""
