"""The sweep folder on disk, its one home on the writing side: atomic, retried writes and the manifest
(store), what rows a folder holds and whether a rerun may add to it (computation), one driver per
folder (lease), `status` and `verify` (inspect), and the schema table (schema). The layout, file names
and columns themselves are workers.dataset's.
"""
