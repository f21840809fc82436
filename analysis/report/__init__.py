"""analysis/report"""
