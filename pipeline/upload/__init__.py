"""Uploading a bundle: `plan` diffs it against the Hub, `commit` makes the commits."""
