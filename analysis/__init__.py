"""Reading a sweep dataset (polars, lazily): metrics, seaborn figures, the HTML report, text tables."""
