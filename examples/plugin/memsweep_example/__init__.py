"""An example memsweep model plugin (see README.md): the `hvo` model, in hvo.py."""
