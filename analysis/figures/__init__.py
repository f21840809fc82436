"""The report's figures: which ones a sweep gets (index), the declared figures of each model drawn by one
generic path (declared), measured rows against the model (measured), and the drawing helpers (plotting).
"""
