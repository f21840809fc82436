"""The HTML report of one sweep: the page (page), its summary and tables (overview) and its Key findings
(findings).
"""
