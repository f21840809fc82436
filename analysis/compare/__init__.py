"""`memsweep compare`: two sweeps point by point (compare), the points and axes shown (axes), numeric
ratios (ratios), string metrics as same or changed (changes), and the HTML page (page).
"""
