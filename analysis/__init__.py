"""Reading a sweep dataset (polars, lazily): metrics, seaborn figures, the HTML report, text tables.

    import analysis
    analysis.scan("results/default", model="memmap").collect()   # one model's rows
    analysis.scan("results/default").collect()                   # every model's, columns unioned
"""

from workers.dataset.parts import scan

__all__ = ["scan"]
