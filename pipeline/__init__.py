"""kernel-pipeline: agent-written GPU kernel projects in, tested Kernel Hub binaries out."""

__version__ = "0.1.0"
