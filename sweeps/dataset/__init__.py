"""The sweep's records on disk: parts, the manifest and Slurm submissions (store), what rows a folder
holds and whether a rerun may add to it (computation), one driver per folder (lease), `status` and
`verify` (inspect), and the schema table (schema). The layout, file names and columns are
workers.dataset's; the file I/O itself (whole-file writes, retried reads, the part lister, the manifest
reader) is workers.folder's, which analysis shares.
"""
